package procfs

import (
	"net/netip"
	"testing"
)

func FuzzParseNetTCP(f *testing.F) {
	f.Add([]byte("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12345 1 0 100 0 0 10 0\n"))
	f.Add([]byte("   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 99 1\n"))
	f.Add([]byte("garbage\n\n1: x y z\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		socks, bad, _ := ParseNetTCP(b, 1000)
		if len(socks) > 1000 || bad < 0 {
			t.Fatal("bounds")
		}
		for _, s := range socks {
			six := s.Local.Addr().Is6()
			back, ok := parseAddr([]byte(FormatAddr(s.Local, six)))
			if !ok || back != s.Local {
				t.Fatalf("round trip %v -> %v", s.Local, back)
			}
		}
	})
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (systemd) S 0 1 1 0 -1 4194560 0 0\n"))
	f.Add([]byte("77 (a) (b)) R 1 77 77 0 -1 2097152 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStat(b)
		if err == nil && len(s.Comm) > len(b) {
			t.Fatal("comm longer than input")
		}
		ParseStatus(b)
		ParseCgroup(b, 64)
		if l, _ := ParseNulList(b, 10); len(l) > 10 {
			t.Fatal("bounds")
		}
	})
}

func TestParseNetTCP(t *testing.T) {
	b := []byte("  sl  local_address rem_address   st\n   0: 0100007F:1F90 0A00000A:0D05 01 00000000:00000000 00:00000000 00000000  1000        0 12345 1\n")
	socks, bad, more := ParseNetTCP(b, 10)
	if bad != 0 || more || len(socks) != 1 {
		t.Fatalf("%v %d %v", socks, bad, more)
	}
	s := socks[0]
	if s.Local != netip.MustParseAddrPort("127.0.0.1:8080") || s.Remote != netip.MustParseAddrPort("10.0.0.10:3333") || s.State != TCPEstablished || s.UID != 1000 || s.Inode != 12345 {
		t.Errorf("%+v", s)
	}
	v6 := FormatAddr(netip.MustParseAddrPort("[2001:db8::1]:443"), true)
	if a, ok := parseAddr([]byte(v6)); !ok || a.String() != "[2001:db8::1]:443" {
		t.Errorf("%s -> %v", v6, a)
	}
}
