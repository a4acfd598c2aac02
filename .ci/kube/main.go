// Command kube-apiserver is k8s.io/kubernetes/cmd/kube-apiserver, built from
// the Go module proxy for the k8s: target's integration tests (.ci/kube.sh).
//
// It is a copy of that command's main (a package main cannot be imported),
// in a module of its own so that the main module neither requires
// k8s.io/kubernetes nor builds it in `go vet ./...`.
package main

import (
	"os"
	_ "time/tzdata" // for timeZone support in CronJob

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // load all the prometheus client-go plugins
	_ "k8s.io/component-base/metrics/prometheus/version"  // for version metric registration
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	command := app.NewAPIServerCommand()
	code := cli.Run(command)
	os.Exit(code)
}
