package license

import "strings"

// The Hugging Face Hub's licence keys, the values a card's `license:` takes
// (https://huggingface.co/docs/hub/repositories-licenses, the table
// "License identifier (to use in repo card)", read 2026-12). Keys that are
// SPDX identifiers in another case (apache-2.0, mit, cc-by-nc-4.0, ...) are
// not listed: Normalize finds them in the SPDX list. Listed are the keys
// whose SPDX identifier is spelled otherwise, and the keys SPDX has no
// identifier for, which become LicenseRef-hf-KEY (a family such as "gpl"
// names no one licence; the model licences — Llama, Gemma, OpenRAIL — are
// not on the SPDX list). "unknown" and "other" name no licence ("").
var hubKeys = map[string]string{
	"c-uda":    "C-UDA-1.0",
	"odc-by":   "ODC-By-1.0",
	"odbl":     "ODbL-1.0",
	"pddl":     "PDDL-1.0",
	"lgpl-lr":  "LGPLLR",
	"agpl-3.0": "AGPL-3.0-only",
	"gpl-2.0":  "GPL-2.0-only",
	"gpl-3.0":  "GPL-3.0-only",
	"lgpl-2.1": "LGPL-2.1-only",
	"lgpl-3.0": "LGPL-3.0-only",

	"openrail":                            "LicenseRef-hf-openrail",
	"openrail++":                          "LicenseRef-hf-openrail-pp",
	"bigscience-openrail-m":               "LicenseRef-hf-bigscience-openrail-m",
	"creativeml-openrail-m":               "LicenseRef-hf-creativeml-openrail-m",
	"bigscience-bloom-rail-1.0":           "LicenseRef-hf-bigscience-bloom-rail-1.0",
	"bigcode-openrail-m":                  "LicenseRef-hf-bigcode-openrail-m",
	"bsd":                                 "LicenseRef-hf-bsd",
	"cc":                                  "LicenseRef-hf-cc",
	"gfdl":                                "LicenseRef-hf-gfdl",
	"gpl":                                 "LicenseRef-hf-gpl",
	"lgpl":                                "LicenseRef-hf-lgpl",
	"h-research":                          "LicenseRef-hf-h-research",
	"intel-research":                      "LicenseRef-hf-intel-research",
	"apple-ascl":                          "LicenseRef-hf-apple-ascl",
	"apple-amlr":                          "LicenseRef-hf-apple-amlr",
	"deepfloyd-if-license":                "LicenseRef-hf-deepfloyd-if-license",
	"fair-noncommercial-research-license": "LicenseRef-hf-fair-noncommercial-research-license",
	"llama2":                              "LicenseRef-hf-llama2",
	"llama3":                              "LicenseRef-hf-llama3",
	"llama3.1":                            "LicenseRef-hf-llama3.1",
	"llama3.2":                            "LicenseRef-hf-llama3.2",
	"llama3.3":                            "LicenseRef-hf-llama3.3",
	"llama4":                              "LicenseRef-hf-llama4",
	"grok2-community":                     "LicenseRef-hf-grok2-community",
	"gemma":                               "LicenseRef-hf-gemma",

	"unknown": "",
	"other":   "",
}

// hubKey looks raw up among the Hub's keys (case-insensitively).
func hubKey(raw string) (string, bool) {
	id, ok := hubKeys[strings.ToLower(raw)]
	return id, ok
}
