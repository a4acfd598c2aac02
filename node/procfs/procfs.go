// Package procfs parses the files of a Linux /proc tree that mlwarden node
// reads: /proc/PID/stat, status, cmdline, cgroup and environ, and
// /proc/PID/net/tcp{,6}. Every parser takes bytes already read (bounded by
// the caller) and never allocates more than what it was given: the bytes
// come from the node under audit, which may be hostile (a process chooses
// its own name and command line).
//
// Written by hand rather than with github.com/prometheus/procfs: that
// library opens paths itself (it cannot read through an os.Root, so a
// copied tree's links could lead out of it) and reads files unbounded.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// PFKthread is the kernel's PF_KTHREAD flag in the flags field of
// /proc/PID/stat (include/linux/sched.h).
const PFKthread = 0x00200000

// Stat is what mlwarden reads from /proc/PID/stat.
type Stat struct {
	PID   int
	Comm  string
	State byte
	PPID  int
	Flags uint64
}

// ParseStat parses /proc/PID/stat. The comm field is in parentheses and may
// itself hold spaces and parentheses: it runs to the last ')'.
func ParseStat(b []byte) (Stat, error) {
	var s Stat
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return s, errors.New("stat: no (comm)")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return s, fmt.Errorf("stat: pid: %w", err)
	}
	s.PID, s.Comm = pid, string(b[open+1:end])
	f := bytes.Fields(b[end+1:])
	// state ppid pgrp session tty_nr tpgid flags
	if len(f) < 7 || len(f[0]) != 1 {
		return s, errors.New("stat: too few fields")
	}
	s.State = f[0][0]
	if s.PPID, err = strconv.Atoi(string(f[1])); err != nil {
		return s, fmt.Errorf("stat: ppid: %w", err)
	}
	if s.Flags, err = strconv.ParseUint(string(f[6]), 10, 64); err != nil {
		return s, fmt.Errorf("stat: flags: %w", err)
	}
	return s, nil
}

// Status is what mlwarden reads from /proc/PID/status.
type Status struct {
	Name string
	PPID int
	UID  int // real UID; -1 when absent
}

// ParseStatus parses the Name, PPid and Uid lines of /proc/PID/status.
func ParseStatus(b []byte) Status {
	s := Status{PPID: -1, UID: -1}
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch string(k) {
		case "Name":
			s.Name = string(v)
		case "PPid":
			if n, err := strconv.Atoi(string(v)); err == nil {
				s.PPID = n
			}
		case "Uid":
			if f := bytes.Fields(v); len(f) > 0 {
				if n, err := strconv.Atoi(string(f[0])); err == nil {
					s.UID = n
				}
			}
		}
	}
	return s
}

// ParseNulList splits /proc/PID/cmdline or environ at NUL bytes, dropping
// the final empty element. At most max elements are kept; more is
// reported by the second result.
func ParseNulList(b []byte, max int) ([]string, bool) {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil, false
	}
	var out []string
	for len(b) > 0 {
		if len(out) == max {
			return out, true
		}
		var w []byte
		w, b, _ = bytes.Cut(b, []byte{0})
		out = append(out, string(w))
	}
	return out, false
}

// EnvNames returns the names of NAME=VALUE entries, never the values.
func EnvNames(env []string) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		out = append(out, k)
	}
	return out
}

// CgroupLine is one line of /proc/PID/cgroup: "ID:controllers:path" (v2:
// "0::path").
type CgroupLine struct {
	Controllers string
	Path        string
}

// ParseCgroup parses /proc/PID/cgroup, keeping at most max lines.
func ParseCgroup(b []byte, max int) []CgroupLine {
	var out []CgroupLine
	for len(b) > 0 && len(out) < max {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		_, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		ctrl, p, ok := bytes.Cut(rest, []byte(":"))
		if !ok {
			continue
		}
		out = append(out, CgroupLine{Controllers: string(ctrl), Path: string(p)})
	}
	return out
}

// TCP states of /proc/net/tcp (include/net/tcp_states.h).
const (
	TCPEstablished = 0x01
	TCPListen      = 0x0A
)

// Socket is one line of /proc/net/tcp or tcp6.
type Socket struct {
	Local, Remote netip.AddrPort
	State         int
	UID           int
	Inode         uint64
}

// ParseNetTCP parses /proc/net/tcp or /proc/net/tcp6 (the header line and
// lines it cannot read are skipped and counted). At most max sockets are
// returned; the third result reports more.
func ParseNetTCP(b []byte, max int) (socks []Socket, bad int, more bool) {
	first := true
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		if first {
			first = false
			if bytes.Contains(line, []byte("local_address")) {
				continue
			}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(socks) == max {
			return socks, bad, true
		}
		s, ok := parseTCPLine(line)
		if !ok {
			bad++
			continue
		}
		socks = append(socks, s)
	}
	return socks, bad, false
}

// parseTCPLine reads "sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...".
func parseTCPLine(line []byte) (Socket, bool) {
	var s Socket
	var f [10][]byte
	n := 0
	for rest := line; n < len(f); {
		rest = bytes.TrimLeft(rest, " \t")
		if len(rest) == 0 {
			break
		}
		i := bytes.IndexAny(rest, " \t")
		if i < 0 {
			i = len(rest)
		}
		f[n], rest = rest[:i], rest[i:]
		n++
	}
	if n < 10 {
		return s, false
	}
	var ok bool
	if s.Local, ok = parseAddr(f[1]); !ok {
		return s, false
	}
	if s.Remote, ok = parseAddr(f[2]); !ok {
		return s, false
	}
	st, err := strconv.ParseUint(string(f[3]), 16, 8)
	if err != nil {
		return s, false
	}
	uid, err := strconv.Atoi(string(f[7]))
	if err != nil {
		return s, false
	}
	ino, err := strconv.ParseUint(string(f[9]), 10, 64)
	if err != nil {
		return s, false
	}
	s.State, s.UID, s.Inode = int(st), uid, ino
	return s, true
}

// parseAddr reads "0100007F:1F90" (IPv4, host byte order per 32-bit word:
// little-endian on the machines mlwarden runs on) or 32 hex digits for IPv6.
func parseAddr(b []byte) (netip.AddrPort, bool) {
	h, p, ok := bytes.Cut(b, []byte(":"))
	if !ok || len(p) != 4 {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(string(p), 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	var raw [16]byte
	switch len(h) {
	case 8, 32:
	default:
		return netip.AddrPort{}, false
	}
	for w := 0; w < len(h)/8; w++ {
		v, err := strconv.ParseUint(string(h[w*8:w*8+8]), 16, 32)
		if err != nil {
			return netip.AddrPort{}, false
		}
		// Each 32-bit word is printed as the host-order integer.
		raw[w*4], raw[w*4+1], raw[w*4+2], raw[w*4+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	var a netip.Addr
	if len(h) == 8 {
		a = netip.AddrFrom4([4]byte(raw[:4]))
	} else {
		a = netip.AddrFrom16(raw).Unmap()
	}
	return netip.AddrPortFrom(a, uint16(port)), true
}

// FormatAddr writes an address as /proc/net/tcp{,6} does: the inverse of
// parseAddr (for test trees and fuzzing).
func FormatAddr(ap netip.AddrPort, six bool) string {
	var raw [16]byte
	n := 4
	if six {
		raw, n = ap.Addr().As16(), 16
	} else {
		a4 := ap.Addr().Unmap().As4()
		copy(raw[:], a4[:])
	}
	var sb strings.Builder
	for w := 0; w < n/4; w++ {
		v := uint32(raw[w*4]) | uint32(raw[w*4+1])<<8 | uint32(raw[w*4+2])<<16 | uint32(raw[w*4+3])<<24
		fmt.Fprintf(&sb, "%08X", v)
	}
	fmt.Fprintf(&sb, ":%04X", ap.Port())
	return sb.String()
}

// SocketInode reads the inode of an fd link target "socket:[12345]".
func SocketInode(link string) (uint64, bool) {
	s, ok := strings.CutPrefix(link, "socket:[")
	if !ok || !strings.HasSuffix(s, "]") {
		return 0, false
	}
	n, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
	return n, err == nil
}
