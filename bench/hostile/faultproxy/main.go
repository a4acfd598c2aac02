// Command faultproxy runs internal/faultproxy in front of a registry, for
// bench/hostile/sources.sh: it prints its host:port and serves until
// killed.
//
//	go run ./bench/hostile/faultproxy -upstream 127.0.0.1:5000 -fault stall -path '/blobs/'
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/mlwarden/mlwarden/internal/faultproxy"
)

func main() {
	upstream := flag.String("upstream", "", "registry host:port (plain HTTP)")
	fault := flag.String("fault", "", "stall, drip, hang, hang-token or none")
	path := flag.String("path", "", "regular expression over the request path (default: every request)")
	after := flag.Int64("after", 1000, "stall: body bytes sent first")
	every := flag.Duration("interval", time.Second, "drip: time between bytes")
	flag.Parse()
	if *upstream == "" {
		log.Fatal("-upstream is needed")
	}
	var re *regexp.Regexp
	if *path != "" {
		re = regexp.MustCompile(*path)
	}
	p := faultproxy.New(*upstream)
	defer p.Close()
	switch *fault {
	case "stall":
		p.Set(faultproxy.Fault{Kind: faultproxy.Stall, Path: re, After: *after})
	case "drip":
		p.Set(faultproxy.Fault{Kind: faultproxy.Drip, Path: re, Interval: *every})
	case "hang":
		p.Set(faultproxy.Fault{Kind: faultproxy.Hang, Path: re})
	case "hang-token":
		p.RequireToken(true)
		p.Set(faultproxy.Fault{Kind: faultproxy.Hang, Path: regexp.MustCompile(`^/token$`)})
	case "none", "":
	default:
		log.Fatalf("unknown -fault %q", *fault)
	}
	fmt.Println(p.Host)
	os.Stdout.Sync()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
}
