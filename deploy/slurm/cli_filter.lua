--[[
mlwarden cli_filter/lua plugin: early feedback for users. It runs inside
sbatch on the submit host, checks the batch script named on the command line
with `mlwarden sbatch`, and stops the submission with mlwarden's lines before
anything reaches the controller.

This is a CONVENIENCE, NEVER THE ENFORCEMENT POINT: it runs with the user's
rights in the user's process, so a user can skip it (another SLURM_CONF, a
build of sbatch without it, the REST API, a script on standard input). The
enforcement point is job_submit.lua on the controller.

Install: copy this file as cli_filter.lua beside slurm.conf on the submit
hosts and set CliFilterPlugins=lua in slurm.conf. See deploy/slurm/README.md.
]]

-- Admin settings --------------------------------------------------------------

-- The mlwarden binary: a bare name is looked up on the user's PATH.
local MLWARDEN = "mlwarden"

-- The hook's own binary, mlwarden-sbatch (same release archive), which starts
-- several times faster: run instead of MLWARDEN when this file exists; nil
-- always runs MLWARDEN. A full path.
local MLWARDEN_SBATCH = "/usr/local/bin/mlwarden-sbatch"

-- Extra flags for `mlwarden sbatch`, e.g. "--fail-on medium".
local MLWARDEN_FLAGS = ""

-- Hard limit on one check, in seconds (coreutils timeout). A check that does
-- not finish in time, or mlwarden missing, lets the submission through:
-- job_submit.lua on the controller decides.
local TIMEOUT = 5

-- -----------------------------------------------------------------------------

local function shell_quote(s)
	return "'" .. string.gsub(s, "'", "'\\''") .. "'"
end

function slurm_cli_setup_defaults(options, early_pass)
	return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, jobid, stepid)
	return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
	-- sbatch puts the script and its arguments in options.argv; srun and
	-- salloc put the command there, which is not a batch script.
	local argv = options["argv"]
	if type(argv) ~= "table" or argv[1] == nil then
		return slurm.SUCCESS -- script on standard input, or --wrap
	end
	local script = argv[1]
	local f = io.open(script, "r")
	if f == nil then
		return slurm.SUCCESS
	end
	local head = f:read(2)
	f:close()
	if head ~= "#!" then
		return slurm.SUCCESS -- not a batch script (srun's command)
	end

	local bin = MLWARDEN
	if MLWARDEN_SBATCH ~= nil then
		local b = io.open(MLWARDEN_SBATCH, "r")
		if b ~= nil then
			b:close()
			bin = MLWARDEN_SBATCH
		end
	end
	local cmd = "timeout -k 1 " .. tostring(TIMEOUT) .. " " .. shell_quote(bin) .. " sbatch"
	if MLWARDEN_FLAGS ~= "" then
		cmd = cmd .. " " .. MLWARDEN_FLAGS
	end
	cmd = cmd .. " -- " .. shell_quote(script) .. " 2>&1; echo \"mlwarden-exit:$?\""
	local p = io.popen(cmd, "r")
	if p == nil then
		return slurm.SUCCESS
	end
	local out = p:read("*a")
	p:close()
	local code = tonumber(string.match(out, "mlwarden%-exit:(%d+)%s*$"))
	out = string.gsub(out, "mlwarden%-exit:%d+%s*$", "")
	out = string.gsub(out, "%s+$", "")
	if out ~= "" and (code == 0 or code == 1) then
		io.stderr:write(out .. "\n")
	end
	if code == 1 then
		io.stderr:write("mlwarden: the job was not submitted; fix the lines above and submit again.\n")
		return slurm.ERROR
	end
	return slurm.SUCCESS
end
