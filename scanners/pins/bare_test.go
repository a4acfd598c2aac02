package pins

import "testing"

// TestBareNameRuns: a file downloaded earlier and run by its bare name —
// as a command, in a Dockerfile's exec form, or as the script of sh -c —
// is a download-then-run when the shell finds the download: in a
// directory on PATH (the defaults, and what the script or ENV adds), or
// where the command runs. A command of the same name downloaded
// elsewhere, or verified first, is not.
func TestBareNameRuns(t *testing.T) {
	checkCases(t, []tcase{
		{"downloaded to a PATH directory", "a.sh", "curl -fsSL -o /usr/local/bin/kubectl https://dl.example.test/kubectl\nchmod +x /usr/local/bin/kubectl\nkubectl version\n", []string{"download-exec@3"}},
		{"downloaded here", "a.sh", "wget -O exe https://example.test/exe && chmod +x exe\nexe --run\n", []string{"download-exec@2"}},
		{"sh -c with the file", "a.sh", "curl -o /usr/bin/tool https://example.test/tool\nbash -c \"tool\"\nsh -c tool\n", []string{"download-exec@2", "download-exec@3"}},
		{"a directory the script puts on PATH", "a.sh", "curl -o /opt/t/bin/tool https://example.test/tool\nexport PATH=/opt/t/bin:$PATH\ntool\n", []string{"download-exec@3"}},
		{"elsewhere, not on PATH", "a.sh", "curl -o /opt/t/bin/tool https://example.test/tool\ntool\n", nil},
		{"elsewhere, another directory", "a.sh", "cd /tmp\ncurl -o tool https://example.test/tool\ncd /srv\ntool\n", nil},
		{"verified first", "a.sh", "curl -o /usr/local/bin/tool https://example.test/tool\necho 'abc  /usr/local/bin/tool' | sha256sum -c -\ntool\n", nil},
		{"Dockerfile: a later RUN by name", "Dockerfile", "FROM x@" + digest + "\nRUN curl -fsSL -o /usr/local/bin/exe https://example.test/exe && chmod +x /usr/local/bin/exe\nRUN exe\n", []string{"download-exec@3"}},
		{"Dockerfile: exec form", "Dockerfile", "FROM x@" + digest + "\nRUN curl -fsSL -o /usr/local/bin/exe https://example.test/exe\nRUN [\"exe\", \"--flag\"]\n", []string{"download-exec@3"}},
		{"Dockerfile: exec form sh -c", "Dockerfile", "FROM x@" + digest + "\nRUN wget -O /usr/bin/exe https://example.test/exe\nRUN [\"/bin/sh\", \"-c\", \"exe\"]\n", []string{"download-exec@3"}},
		{"Dockerfile: WORKDIR on PATH", "Dockerfile", "FROM x@" + digest + "\nWORKDIR /app\nENV PATH=/app:$PATH\nRUN curl -o tool https://example.test/tool\nRUN tool\n", []string{"download-exec@5"}},
		{"Dockerfile: each RUN starts in the WORKDIR", "Dockerfile", "FROM x@" + digest + "\nRUN cd /tmp && curl -o tool https://example.test/tool\nRUN tool\n", nil},
	})
}
