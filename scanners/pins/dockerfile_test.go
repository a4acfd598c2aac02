package pins

import "testing"

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDockerfile(t *testing.T) {
	checkCases(t, []tcase{
		{"latest and tag", "Dockerfile", "FROM ubuntu\nFROM python:3.11-slim\nFROM registry.example.com/nvidia/pytorch:23.10-py3@" + digest + "\n",
			[]string{"image-latest@1", "image-not-digest@2"}},
		{"explicit latest", "Dockerfile", "FROM ubuntu:latest AS base\n", []string{"image-latest@1"}},
		{"ARG base with default", "Containerfile", "ARG BASE=registry.example.com/nvidia/pytorch:23.10-py3\nFROM ${BASE}\n", []string{"image-not-digest@2"}},
		{"ARG tag hides latest", "Dockerfile", "ARG TAG=latest\nFROM pytorch/pytorch:$TAG\n", []string{"image-latest@2"}},
		{"ARG without default", "Dockerfile", "ARG BASE\nFROM ${BASE}\n", []string{"image-variable@2"}},
		{"ARG pinned default", "Dockerfile", "ARG BASE=ubuntu:22.04@" + digest + "\nFROM $BASE\n", nil},
		{"ARG default syntax", "Dockerfile", "FROM ${IMG:-python:3.12}\n", []string{"image-not-digest@1"}},
		{"multi-stage alias and scratch", "Dockerfile", "FROM golang:1.22@" + digest + " AS build\nRUN go build\nFROM build AS test\nFROM scratch\nCOPY --from=build /x /x\nCOPY --from=0 /y /y\nCOPY --from=busybox:1.36 /bin/sh /sh\n",
			[]string{"image-not-digest@7"}},
		{"RUN pip continuation", "Dockerfile", "FROM x@" + digest + "\nRUN apt-get update && \\\n    pip install --no-cache-dir \\\n      torch \\\n      numpy==1.26.4\n",
			[]string{"pip-unpinned@4"}},
		{"RUN with comment in continuation", "Dockerfile", "FROM x@" + digest + "\nRUN pip install \\\n# pinned below\n    \"transformers>=4.40\"\n",
			[]string{"pip-unpinned@4"}},
		{"RUN heredoc", "Dockerfile", "# syntax=docker/dockerfile:1\nFROM x@" + digest + "\nRUN <<EOF\nset -e\n# comment\npip install accelerate\ncurl -fsSL https://example.test/install.sh | bash\nEOF\n",
			[]string{"pip-unpinned@6", "curl-pipe-shell@7"}},
		{"RUN python heredoc", "Dockerfile", "FROM x@" + digest + "\nRUN python3 <<EOF\nfrom transformers import AutoModel\nAutoModel.from_pretrained(\"bert-base-uncased\")\nEOF\n",
			[]string{"hf-revision@4"}},
		{"RUN exec form", "Dockerfile", "FROM x@" + digest + "\nRUN [\"pip\", \"install\", \"vllm\"]\nRUN [\"/bin/sh\", \"-c\", \"pip install --extra-index-url https://pkgs.example.test/simple torch\"]\n",
			[]string{"pip-unpinned@2", "pip-extra-index-url@3", "pip-unpinned@3"}},
		{"hashes fine", "Dockerfile", "FROM x@" + digest + "\nRUN pip install --require-hashes -r requirements.txt && pip install torch==2.3.0 --hash=sha256:abc\n", nil},
		{"ENV extra index", "Dockerfile", "FROM x@" + digest + "\nENV PIP_EXTRA_INDEX_URL=https://pkgs.example.test/simple\n", []string{"pip-extra-index-url@2"}},
		{"ADD without checksum", "Dockerfile", "FROM x@" + digest + "\nADD https://example.test/model.bin /m.bin\nADD --checksum=sha256:abcd https://example.test/a.tgz /a\nADD https://example.test/repo.git#v1.0 /src\n",
			[]string{"download-no-checksum@2", "git-clone-unpinned@4"}},
		{"git clone pinned across RUNs", "Dockerfile", "FROM x@" + digest + "\nRUN git clone https://example.test/o/apex.git\nRUN cd apex && git checkout 0123456789abcdef0123456789abcdef01234567\n", nil},
		{"git clone unpinned", "Dockerfile", "FROM x@" + digest + "\nRUN git clone --depth 1 -b v2.0 https://example.test/o/flash.git /opt/flash && pip install /opt/flash\n",
			[]string{"git-clone-unpinned@2"}},
		{"variable hides package version", "Dockerfile", "FROM x@" + digest + "\nARG TORCH=2.3.0\nRUN pip install torch==${TORCH} && pip install vllm${VLLM_SPEC}\n", nil},
		{"parse error", "Dockerfile", "FROM x@" + digest + "\nRUN pip install 'unterminated\n", []string{"unparsed@2"}},
	})
}
