-- :checkhealth filescout — is the server there, which version, what its index holds for this
-- project, and what to do when something is missing. It runs the command the plugin's `cmd`
-- names (up to `serve`) with `--version` and `status --json`, or asks the running server.

local M = {}

local health = vim.health

local function present(value)
  return value ~= nil and value ~= vim.NIL
end

local function shown(cmd)
  return table.concat(vim.tbl_map(function(word)
    return word:find("[%s'\"]") and vim.inspect(word) or word
  end, cmd), " ")
end

local INSTALL = {
  "Install filescout (Python 3.10 or newer) in a virtual environment: `pip install -e .` in a "
    .. "checkout of filescout.",
  "Then name it in the plugin's settings: require(\"filescout\").setup({ cmd = { "
    .. "\"/path/to/venv/bin/filescout\", \"serve\" } }), or put the environment's bin directory "
    .. "on the PATH Neovim starts with.",
}

-- Runs `cmd` and returns its result ({ code, stdout, stderr }); a command that cannot start
-- (not found, not executable) is code -1 with the reason in stderr.
local function run(cmd, timeout)
  local ok, process = pcall(vim.system, cmd, { text = true, timeout = timeout })
  if not ok then
    return { code = -1, stdout = "", stderr = tostring(process) }
  end
  return process:wait()
end

local function first_line(text)
  return vim.trim(text or ""):match("[^\n]*") or ""
end

local function last_line(text)
  local lines = vim.split(vim.trim(text or ""), "\n")
  return lines[#lines] or ""
end

-- :checkhealth runs in a buffer of its own; the project is that of the buffer it was called from
-- (the alternate buffer), else Neovim's working directory.
local function workspace(config)
  local previous = vim.fn.bufnr("#")
  if previous > 0 and vim.bo[previous].buftype == "" then
    local name = vim.api.nvim_buf_get_name(previous)
    if name ~= "" then
      local marker = vim.fs.find(config.root_markers, { path = vim.fs.dirname(name), upward = true })[1]
      if marker then
        return vim.fs.dirname(marker), "the project of " .. vim.fn.fnamemodify(name, ":~:.")
      end
    end
  end
  return vim.uv.cwd(), "Neovim's working directory"
end

local function server_check(config)
  health.start("filescout: server")
  if vim.fn.has("nvim-0.10") == 0 then
    health.error("Neovim 0.10 or newer is needed", "Upgrade Neovim.")
    return nil
  end
  local cmd = config.cmd
  if type(cmd) ~= "table" or type(cmd[1]) ~= "string" then
    health.error("the plugin's `cmd` is not a list of strings: " .. vim.inspect(cmd),
      "Set it in require(\"filescout\").setup({ cmd = { \"filescout\", \"serve\" } }).")
    return nil
  end
  local executable = vim.fn.exepath(cmd[1])
  if executable == "" then
    local where = cmd[1]:find("/", 1, true) and "No executable file has that path."
      or ("Neovim looked for it on its PATH: " .. (vim.env.PATH or ""))
    health.error(string.format("server command not found: `%s` (the plugin's cmd is `%s`)", cmd[1], shown(cmd)),
      vim.list_extend({ where }, INSTALL))
    return nil
  end
  health.ok(string.format("server command: `%s` (%s)", shown(cmd), executable))

  -- The command up to `serve` is the CLI: { "filescout" }, { python, "-m", "filescout" }, ...
  local base
  for index, word in ipairs(cmd) do
    if word == "serve" then
      base = vim.list_slice(cmd, 1, index - 1)
      break
    end
  end
  if not base then
    health.warn("the plugin's cmd does not run `filescout serve`, so its version is not checked",
      "If it is a wrapper, check it by hand: it should start `filescout serve`.")
    return nil
  end
  local version_cmd = vim.list_extend(vim.deepcopy(base), { "--version" })
  local result = run(version_cmd, 20000)
  local version = result.code == 0 and (result.stdout or ""):match("^filescout (%S+)")
  if not version then
    local why = result.code == 0 and ("it printed: " .. first_line(result.stdout))
      or string.format("exit %d: %s", result.code, last_line(result.stderr))
    local advice = { "Run `" .. shown(version_cmd) .. "` in a terminal to see why." }
    if (result.stderr or ""):find("No module named", 1, true) then
      advice = { "filescout is not installed in that Python: install it there (`" .. cmd[1]
        .. " -m pip install -e /path/to/filescout`), or name a Python it is installed in." }
    end
    health.error(string.format("`%s` failed (%s)", shown(version_cmd), why), advice)
    return nil
  end
  health.ok("version: filescout " .. version)
  return { base = base, version = version }
end

local function status_through(client)
  local params = { command = "filescout.status" }
  local response, err
  if vim.fn.has("nvim-0.11") == 1 then
    response, err = client:request_sync("workspace/executeCommand", params, 10000)
  else
    response, err = client.request_sync("workspace/executeCommand", params, 10000)
  end
  if not response then
    return nil, err or "no answer within 10 s"
  end
  if response.err then
    return nil, response.err.message
  end
  return response.result
end

local function status_from_cli(server, root)
  local status_cmd = vim.list_extend(vim.deepcopy(server.base), { "status", "--json", root })
  local result = run(status_cmd, 60000)
  if result.code ~= 0 then
    return nil, string.format("`%s` failed (exit %d): %s", shown(status_cmd), result.code, last_line(result.stderr))
  end
  local ok, status = pcall(vim.json.decode, result.stdout, { luanil = { object = true, array = true } })
  if not ok or type(status) ~= "table" then
    return nil, string.format("`%s` printed no status: %s", shown(status_cmd), first_line(result.stdout))
  end
  return status
end

-- How to run a CLI command with the plugin's server command, for advice.
local function cli(server, words)
  return shown(vim.list_extend(vim.deepcopy(server and server.base or { "filescout" }), words))
end

local function report_status(status, root, client, server)
  local index_cmd = cli(server, { "index", root })
  if present(status.lastError) or status.phase == "failed" then
    health.error("indexing failed: " .. (present(status.lastError) and status.lastError or "phase failed"), {
      client and "Reindex with :FilescoutReindex; the server's log (:LspLog) says more."
        or "Index it from a terminal to see why: `" .. index_cmd .. "`",
    })
  end
  local counts = {}
  for name, count in pairs(status.byStatus or {}) do
    table.insert(counts, count .. " " .. name)
  end
  table.sort(counts)
  local held = string.format("%d files%s", status.files or 0,
    #counts > 0 and (" (" .. table.concat(counts, ", ") .. ")") or "")
  if status.phase == "scanning" or status.phase == "annotating" then
    health.ok(string.format("index: %s, %s now", held, status.phase))
  elseif not present(status.lastScan) then
    health.warn("index: not built yet (" .. held .. ")", {
      client and "Reindex with :FilescoutReindex."
        or "Open a file of the project (with setup({ autostart = true })) or run :FilescoutStart to index it.",
      "Or index it from a terminal: `" .. index_cmd .. "`",
    })
  else
    health.ok(string.format("index: %s, last scan %s", held, status.lastScan))
  end
  if present(status.dbPath) then
    health.info("index file: " .. status.dbPath)
  end
  if status.role == "reader" then
    local writer = present(status.writerPid) and ("pid " .. status.writerPid) or "another process"
    local message = string.format("another filescout process (%s) writes this index; this one reads it", writer)
    if client then
      health.warn(message, "Settings such as `exclude` apply in the writing process. To make this "
        .. "server the writer, stop that process and restart this one (:LspRestart filescout).")
    else
      health.info(message)
    end
  end
  local model = status.model
  if type(model) == "table" then
    local line = string.format("model annotation: %s, %s%s", model.annotator or "?", model.state or "?",
      present(model.message) and (" — " .. model.message) or "")
    if model.state == "unavailable" or model.state == "refused" or model.state == "budget_spent" then
      health.warn(line, "Check the model settings (settings.model) and its endpoint; summaries "
        .. "come from the code's structure meanwhile.")
    else
      health.info(line)
    end
  end
  local shared = status.sharedCache
  if type(shared) == "table" and shared.state ~= "ready" then
    health.warn(string.format("shared cache %s: %s%s", shared.location or "", shared.state or "?",
      present(shared.lastError) and (" — " .. shared.lastError) or ""), "See docs/TEAMS.md.")
  end
end

local function workspace_check(config, server)
  health.start("filescout: workspace")
  local root, why = workspace(config)
  health.info(string.format("workspace: %s (%s)", root, why))
  local client = require("filescout").client(root)
  local status, err
  if client then
    local info = client.server_info
    local running = type(info) == "table" and present(info.version) and info.version or nil
    health.ok(string.format("server running for it (client %d%s)", client.id,
      running and (", filescout " .. running) or ""))
    if running and server and running ~= server.version then
      health.warn(string.format("the running server is filescout %s, the command gives %s", running,
        server.version), "Restart it to use the new version: :LspRestart filescout (or restart Neovim).")
    end
    status, err = status_through(client)
  else
    health.info(config.autostart
      and "no server running for it: opening a file of the project starts one, :FilescoutStart starts one now"
      or "no server running for it (autostart is off): :FilescoutStart starts one")
    if not server then
      health.info("the index is checked once the server command works")
      return
    end
    status, err = status_from_cli(server, root)
  end
  if not status then
    health.error("could not read the index: " .. tostring(err),
      "Run `" .. cli(server, { "status", root }) .. "` in a terminal to see why.")
    return
  end
  report_status(status, root, client, server)
end

function M.check()
  local config = require("filescout").config
  local server = server_check(config)
  workspace_check(config, server)
end

return M
