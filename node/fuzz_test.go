package node

import "testing"

func FuzzParseGPUProcesses(f *testing.F) {
	f.Add([]byte("pid, process_name, used_memory [MiB], gpu_uuid\n1234, python3, 100 MiB, GPU-0\n"))
	f.Add([]byte("1, \"a,b\", 1 MiB, GPU-x\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, _ := ParseGPUProcesses(b)
		for _, p := range ps {
			if p.PID <= 0 {
				t.Fatal("pid")
			}
		}
	})
}

func FuzzParseCron(f *testing.F) {
	f.Add("*/5 * * * * curl x | sh\n@reboot /tmp/x\nA=b\n# c\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range parseCron("x", s, "u", true) {
			if e.Command == "" {
				t.Fatal("empty command")
			}
			judgeCommand(e.Command)
		}
		parseCron("x", s, "", false)
		constrainDevices([]byte(s))
		pamSlurmAdopt([]byte(s))
	})
}
