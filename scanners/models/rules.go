package models

import "github.com/mlwarden/mlwarden/scanners"

func rule(name string, sev scanners.Severity, title, why, fix string) scanners.Rule {
	return scanners.Rule{ID: "models/" + name, Check: scanners.CheckModels, Severity: sev, Title: title, Why: why, Fix: fix}
}

const fixPickle = "Do not load this file; re-export the weights as safetensors (or load with torch.load(weights_only=True) only after review), and obtain models from a trusted, signed source."

var (
	ruleDangerous = rule("pickle-dangerous-global", scanners.SeverityCritical,
		"Pickle imports a dangerous global",
		"Loading the pickle (torch.load, joblib.load, pickle.load, np.load(allow_pickle=True)) imports and can call it, which runs code, touches files, processes or the network.",
		fixPickle)
	ruleUnknown = rule("pickle-unknown-global", scanners.SeverityMedium,
		"Pickle imports a global that is not known to be safe",
		"Every global a pickle imports is imported and may be called on load; this one is in neither the safe nor the library tier of rules/pickle.yaml.",
		"Check that the named module is one you trust; if so add it to a user rules/pickle.yaml (safe or library tier), otherwise convert the model to safetensors.")
	ruleDynamic = rule("pickle-dynamic-global", scanners.SeverityCritical,
		"Pickle computes the name of a global it imports",
		"STACK_GLOBAL with operands that are not string constants (built by a call, or from a broken memo) hides which global is imported; no benign writer does this.",
		fixPickle)
	ruleExtension = rule("pickle-extension-code", scanners.SeverityHigh,
		"Pickle imports a global through an extension code (EXT1/EXT2/EXT4)",
		"Extension codes resolve through copyreg's registry, which the pickle itself or the loading process can fill, so the imported global cannot be known from the file.",
		fixPickle)
	ruleMalformed = rule("pickle-malformed", scanners.SeverityHigh,
		"Pickle stream is malformed",
		"A truncated stream, an unknown opcode, a frame violation or a stack error makes scanners give up while the unpickler has already run what came before it (nullifAI-style bypass).",
		"Do not load this file; obtain an intact copy from a trusted source.")
	ruleTrailing = rule("pickle-trailing-data", scanners.SeverityHigh,
		"Data after the pickle's STOP opcode",
		"Several pickles or bytes after STOP are read by loaders that unpickle more than one stream (PyTorch's legacy format, joblib) and hide payloads from scanners that stop at the first STOP.",
		"Do not load this file; re-export it with the library that wrote it.")
	ruleArchive = rule("archive-malformed", scanners.SeverityHigh,
		"Model container is malformed or ambiguous",
		"Zip entries with duplicate names, mismatched local headers, odd flag bits or bad CRCs are read differently by PyTorch and by Python's zipfile, which is how pickles are hidden from scanners.",
		"Re-create the archive with the library that writes it (torch.save, np.savez, zipfile) and verify its checksum against the publisher's.")
	ruleUnscannable = rule("unscannable", scanners.SeverityHigh,
		"Part of a model file could not be scanned",
		"An encrypted, corrupt or unsupported archive member, or a size, count or depth limit, left content unscanned; code may hide there. A limit also makes the run exit 2.",
		"Unpack the archive and scan its content, or obtain the model in a plain format.")
	ruleNumpyObject = rule("numpy-object-array", scanners.SeverityLow,
		"NumPy array holds Python objects (pickle)",
		"An .npy array with object dtype is a pickle: np.load(allow_pickle=True) runs it. Its pickle is analysed too.",
		"Store numeric arrays only, or save the data in a format without pickles.")
	ruleKerasLambda = rule("keras-lambda", scanners.SeverityHigh,
		"Keras model contains a Lambda layer",
		"A Lambda layer stores Python bytecode or a function reference that runs when the model is loaded (CVE-2024-3660; .h5 ignores safe_mode, CVE-2025-9905).",
		"Replace the Lambda layer with a registered custom layer whose code you review, and load with safe_mode=True.")
	ruleKerasModule = rule("keras-unsafe-module", scanners.SeverityHigh,
		"Keras config imports a callable from outside Keras",
		"A config entry with a module outside keras imports that module on load (CVE-2025-1550, CVE-2025-8747); a dangerous module runs code.",
		"Load only models whose custom objects you have reviewed, with safe_mode=True and a current Keras.")
	ruleTFOp = rule("tf-unsafe-op", scanners.SeverityHigh,
		"TensorFlow graph uses an op that runs Python or touches files",
		"Ops such as PyFunc, ReadFile and WriteFile in a SavedModel graph run Python callbacks or read and write files when the graph runs.",
		"Review the graph (saved_model_cli show --all) and rebuild it without these ops.")
	ruleONNXPath = rule("onnx-external-data-path", scanners.SeverityHigh,
		"ONNX external data points outside the model directory",
		"An external-data location that is absolute or climbs out with .. makes onnx.load read (or onnx.save write) files outside the model (CVE-2022-25882, CVE-2024-27318, CVE-2025-51480).",
		"Keep external data files next to the model with plain relative names.")
	ruleEmbeddedCode = rule("embedded-code", scanners.SeverityCritical,
		"Python code hidden in a model imports or calls dangerous functions",
		"Source code inside a model (the argument of an exec() a pickle calls, often base64- or hex-encoded, or a string in safetensors metadata) runs with the loader's rights once it is evaluated.",
		fixPickle)
	ruleONNXCustomOp = rule("onnx-custom-op", scanners.SeverityMedium,
		"ONNX model calls operators from a custom domain",
		"Nodes outside the standard ONNX and ONNX Runtime domains run kernels registered by a custom-op library; onnxruntime-extensions (ai.onnx.contrib) runs PyOp nodes as Python functions of the loading process.",
		"Load the model only with custom-op libraries you have reviewed, or re-export it with standard operators.")
	ruleGGUFTemplate = rule("gguf-template-injection", scanners.SeverityCritical,
		"GGUF chat template reaches Python internals",
		"Chat templates are Jinja2 rendered by the runtime; a template walking __class__, __globals__, __subclasses__ and the like, or the attributes of Jinja's globals, escapes to Python (CVE-2024-34359).",
		"Do not serve this model; replace tokenizer.chat_template with a reviewed template.")
	ruleChatTemplate = rule("chat-template-injection", scanners.SeverityCritical,
		"Chat template reaches Python internals",
		"A chat template (tokenizer_config.json chat_template, a .jinja file, an Ollama Modelfile TEMPLATE) is Jinja2 rendered by the serving runtime; one that walks __globals__, __builtins__, __subclasses__ or the attributes of Jinja's globals escapes to Python and runs code (CVE-2024-34359; sandbox escapes CVE-2019-10906, CVE-2024-56326).",
		"Do not serve the model with this template; replace it with a reviewed one (the model family's published template).")
	ruleGGUFMalformed = rule("gguf-malformed", scanners.SeverityHigh,
		"GGUF file is malformed",
		"Lengths, counts or offsets that do not fit the file crash or mislead loaders (memory-safety bugs in GGUF parsers).",
		"Obtain an intact copy of the model from a trusted source.")
	ruleSafetensors = rule("safetensors-malformed", scanners.SeverityHigh,
		"safetensors header is invalid",
		"A header with bad JSON, unknown dtypes, offsets outside the data, overlapping tensors or a size that does not match the file is rejected or misread by loaders and can hide data.",
		"Re-export the weights with the safetensors library and verify the publisher's checksum.")
)

var allRules = []scanners.Rule{
	ruleDangerous, ruleUnknown, ruleDynamic, ruleExtension, ruleMalformed, ruleTrailing,
	ruleArchive, ruleUnscannable, ruleNumpyObject, ruleKerasLambda, ruleKerasModule, ruleTFOp,
	ruleONNXPath, ruleGGUFTemplate, ruleGGUFMalformed, ruleSafetensors, ruleChatTemplate, ruleONNXCustomOp, ruleEmbeddedCode,
	ruleLicenseUnknown, ruleLicenseRestricted, ruleCardMissing, ruleGated,
}
