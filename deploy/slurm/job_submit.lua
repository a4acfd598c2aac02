--[[
mlwarden job_submit/lua plugin: checks every batch job's script with
`mlwarden sbatch` when it reaches slurmctld, and rejects the job when
mlwarden finds a problem at or above its --fail-on severity (default high):
a token in the script, a :latest container image, a notebook open to the
network, a crypto miner, a directive Slurm reads differently than written.

Install: copy this file as job_submit.lua beside slurm.conf, set
JobSubmitPlugins=lua in slurm.conf, and `scontrol reconfigure`.
See deploy/slurm/README.md. Lua 5.1 (as Debian's Slurm links it).

This runs inside slurmctld while it holds its job lock, so every call is
bounded by TIMEOUT (coreutils `timeout`, then SIGKILL); the measured cost is
in README.md.
]]

-- Admin settings --------------------------------------------------------------

-- The mlwarden binary: a bare name is looked up on slurmctld's PATH.
local MLWARDEN = "mlwarden"

-- The hook's own binary, mlwarden-sbatch (in the same release archive): the
-- same `sbatch` command without the rest of mlwarden, so that a process per
-- job starts in a few milliseconds instead of tens. Used instead of MLWARDEN
-- when this file exists; nil always runs MLWARDEN. A full path.
local MLWARDEN_SBATCH = "/usr/local/bin/mlwarden-sbatch"

-- Extra flags for `mlwarden sbatch`, e.g. "--fail-on medium" or
-- "--config /etc/slurm/mlwarden.yaml" (ignore entries), or
-- "--show medium" to warn about lower findings without rejecting.
local MLWARDEN_FLAGS = ""

-- What to do when mlwarden could not check the script (exit 2), timed out or
-- could not be started: "fail-closed" rejects the job, "fail-open" lets it
-- through (and logs it in slurmctld's log).
local ON_ERROR = "fail-closed"

-- Hard limit on one check, in seconds (coreutils timeout, SIGKILL 1 s later;
-- with SOCKET, the socket's timeout).
local TIMEOUT = 5

-- The checker serving on a Unix socket (`mlwarden sbatch --serve SOCKET`, run
-- as SlurmUser; see README.md). A check then costs a few milliseconds instead
-- of a process start and the detectors' set-up. Needs lua-socket (Debian:
-- lua-socket). nil runs MLWARDEN for each job. When the socket does not
-- answer, the job is checked by running MLWARDEN.
local SOCKET = nil

-- Users, uids and accounts whose jobs are not checked:
-- EXEMPT_USERS["alice"] = true, EXEMPT_UIDS[1234] = true,
-- EXEMPT_ACCOUNTS["ops"] = true.
local EXEMPT_USERS = {}
local EXEMPT_UIDS = {}
local EXEMPT_ACCOUNTS = {}

-- Where the script is written for mlwarden to read (a private temporary file,
-- removed at once). nil uses Lua's os.tmpname() (mkstemp in /tmp).
local TMPDIR = nil

-- -----------------------------------------------------------------------------

-- SPANK options of NVIDIA pyxis reach the controller in the job's
-- environment; the image given as `sbatch --container-image=...` (or in an
-- #SBATCH line) is checked as the job really gets it.
local SPANK_VARS = {
	"_SLURM_SPANK_OPTION_pyxis_container_image",
}

-- shell_quote quotes s for /bin/sh: the whole word in single quotes, each
-- single quote written as '\''. Nothing a user controls reaches the shell
-- unquoted.
local function shell_quote(s)
	return "'" .. string.gsub(s, "'", "'\\''") .. "'"
end

local function exempt(job_desc, submit_uid)
	if job_desc.user_name ~= nil and EXEMPT_USERS[job_desc.user_name] then
		return "user " .. job_desc.user_name
	end
	if EXEMPT_UIDS[submit_uid] then
		return "uid " .. tostring(submit_uid)
	end
	if job_desc.account ~= nil and EXEMPT_ACCOUNTS[job_desc.account] then
		return "account " .. job_desc.account
	end
	return nil
end

local function temp_file()
	if TMPDIR == nil then
		return os.tmpname()
	end
	-- mktemp creates the file with mode 0600 under a name nobody can guess.
	local p = io.popen("mktemp " .. shell_quote(TMPDIR .. "/mlwarden-job.XXXXXXXX"))
	local name = p:read("*l")
	p:close()
	return name
end

local function netstring(s)
	return string.format("%d:%s,", string.len(s), s)
end

-- ask_checker sends the script to the checker on SOCKET. It returns nil when
-- the checker cannot be reached (the caller then runs MLWARDEN).
local function ask_checker(script, job_desc)
	local ok, unix = pcall(require, "socket.unix")
	if not ok then
		return nil, "lua-socket is not installed"
	end
	local c = (unix.stream or unix)()
	c:settimeout(TIMEOUT)
	local okc, err = c:connect(SOCKET)
	if not okc then
		c:close()
		return nil, err
	end
	local req = netstring("name") .. netstring("job script")
	local env = job_desc.environment
	if env ~= nil then
		for _, name in ipairs(SPANK_VARS) do
			local v = env[name]
			if v ~= nil and v ~= "" then
				req = req .. netstring("env") .. netstring(name .. "=" .. v)
			end
		end
	end
	req = req .. netstring("script") .. netstring(script)
	local sent, serr = c:send(req)
	if sent == nil then
		c:close()
		return nil, serr
	end
	local out, rerr, partial = c:receive("*a")
	c:close()
	if out == nil then
		if rerr == "timeout" then
			return 124, "mlwarden: the checker did not answer within " .. tostring(TIMEOUT) .. " s"
		end
		out = partial
	end
	local code, rest = string.match(out or "", "^exit (%d+)\n(.*)$")
	if code == nil then
		return 2, "mlwarden: bad answer from the checker"
	end
	return tonumber(code), (string.gsub(rest, "%s+$", ""))
end

-- hook_binary is the binary run per job: MLWARDEN_SBATCH when it is there,
-- else MLWARDEN.
local function hook_binary()
	if MLWARDEN_SBATCH ~= nil then
		local f = io.open(MLWARDEN_SBATCH, "r")
		if f ~= nil then
			f:close()
			return MLWARDEN_SBATCH
		end
	end
	return MLWARDEN
end

-- run_mlwarden returns mlwarden's exit status (124/137 on timeout, 127 when it
-- cannot be started), its output and the binary it ran.
local function run_mlwarden(script, job_desc)
	local bin = hook_binary()
	local path = temp_file()
	if path == nil then
		return 2, "mlwarden: could not create a temporary file"
	end
	local f = io.open(path, "w")
	if f == nil then
		os.remove(path)
		return 2, "mlwarden: could not write " .. path
	end
	f:write(script)
	f:close()

	local cmd = "timeout -k 1 " .. tostring(TIMEOUT) .. " " .. shell_quote(bin) .. " sbatch"
	if MLWARDEN_FLAGS ~= "" then
		cmd = cmd .. " " .. MLWARDEN_FLAGS
	end
	local env = job_desc.environment
	if env ~= nil then
		for _, name in ipairs(SPANK_VARS) do
			local v = env[name]
			if v ~= nil and v ~= "" then
				cmd = cmd .. " --sbatch-env " .. shell_quote(name .. "=" .. v)
			end
		end
	end
	cmd = cmd .. " --name 'job script' - < " .. shell_quote(path) .. " 2>&1; echo \"mlwarden-exit:$?\""

	local p = io.popen(cmd, "r")
	if p == nil then
		os.remove(path)
		return 127, "mlwarden: could not start " .. bin, bin
	end
	local out = p:read("*a")
	p:close()
	os.remove(path)

	-- Lua 5.1's close() does not return the status; the shell echoes it.
	local code = tonumber(string.match(out, "mlwarden%-exit:(%d+)%s*$"))
	out = string.gsub(out, "mlwarden%-exit:%d+%s*$", "")
	out = string.gsub(out, "%s+$", "")
	if code == nil then
		code = 2
	end
	return code, out, bin
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local script = job_desc.script
	if script == nil or script == "" then
		return slurm.SUCCESS -- srun/salloc: no batch script
	end
	local who = exempt(job_desc, submit_uid)
	if who ~= nil then
		slurm.log_info("mlwarden: not checking job %s of uid %u: %s is exempt",
			tostring(job_desc.name), submit_uid, who)
		return slurm.SUCCESS
	end

	local code, out, bin
	if SOCKET ~= nil then
		code, out = ask_checker(script, job_desc)
		if code == nil then
			slurm.log_error("mlwarden: checker on %s: %s; running %s", SOCKET, tostring(out), hook_binary())
		end
	end
	if code == nil then
		code, out, bin = run_mlwarden(script, job_desc)
	end
	if code == 0 then
		if out ~= "" then
			slurm.log_user("%s", out) -- warnings below --fail-on (--show)
		end
		return slurm.SUCCESS
	end
	if code == 1 then
		slurm.log_info("mlwarden: rejected job %s of uid %u", tostring(job_desc.name), submit_uid)
		slurm.log_user("%s", out)
		return slurm.ERROR
	end

	local why
	if code == 124 or code == 137 then
		why = "mlwarden timed out after " .. tostring(TIMEOUT) .. " s"
	elseif code == 126 or code == 127 then
		why = "mlwarden could not be started (" .. tostring(bin) .. ")"
	else
		why = "mlwarden could not check the script (exit " .. tostring(code) .. ")"
	end
	slurm.log_error("mlwarden: job %s of uid %u: %s: %s", tostring(job_desc.name), submit_uid, why, out)
	if ON_ERROR == "fail-open" then
		return slurm.SUCCESS
	end
	slurm.log_user("mlwarden: %s; the job was not submitted. Ask your cluster admins.", why)
	return slurm.ERROR
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

slurm.log_info("mlwarden job_submit/lua loaded (binary %s, socket %s, %s, timeout %d s)",
	hook_binary(), tostring(SOCKET), ON_ERROR, TIMEOUT)
return slurm.SUCCESS
