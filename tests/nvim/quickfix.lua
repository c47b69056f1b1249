-- Neovim as a real LSP client of FlipFlop: open a CUDA file, wait for the energy diagnostic,
-- apply the preferred quick fix, write the file and wait for the diagnostics of the saved text.
--
-- Run: nvim --headless -u NONE -n -i NONE -c "luafile tests/nvim/quickfix.lua"
-- Environment: FLIPFLOP_NVIM_FILE (the .cu file to edit), FLIPFLOP_NVIM_RESULT (JSON written
-- here), FLIPFLOP_NVIM_PYTHON (the Python that runs the server), FLIPFLOP_NVIM_WAIT_MS.

local file = assert(os.getenv("FLIPFLOP_NVIM_FILE"), "FLIPFLOP_NVIM_FILE is not set")
local result_path = assert(os.getenv("FLIPFLOP_NVIM_RESULT"), "FLIPFLOP_NVIM_RESULT is not set")
local python = os.getenv("FLIPFLOP_NVIM_PYTHON") or "python3"
local wait_ms = tonumber(os.getenv("FLIPFLOP_NVIM_WAIT_MS") or "120000")

local result = { steps = {} }

local function step(name)
  table.insert(result.steps, name)
end

local function write_result()
  local handle = assert(io.open(result_path, "w"))
  handle:write(vim.json.encode(result))
  handle:close()
end

-- Every publishDiagnostics the client receives, in order, before Neovim files it away.
local published = {}
local publish = vim.lsp.handlers["textDocument/publishDiagnostics"]
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, params, ctx, config)
  table.insert(published, { version = params.version, count = #params.diagnostics })
  return publish(err, params, ctx, config)
end

local function flipflop_diagnostics(buf, code)
  local found = {}
  for _, diagnostic in ipairs(vim.diagnostic.get(buf)) do
    if diagnostic.source == "flipflop" and (code == nil or diagnostic.code == code) then
      table.insert(found, diagnostic)
    end
  end
  return found
end

local function run()
  vim.cmd.edit(vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start({
    name = "flipflop",
    cmd = { python, "-m", "flipflop.lsp", "--stdio" },
    root_dir = vim.fs.dirname(file),
    settings = { flipflop = { gpu = "rtx3070", minSaving = 0.05 } },
  }, { bufnr = buf })
  assert(client_id, "the language server did not start")
  local client = assert(vim.lsp.get_client_by_id(client_id))
  step("started")

  local arrived = vim.wait(wait_ms, function()
    return #flipflop_diagnostics(buf, "FF001") > 0
  end, 100)
  assert(arrived, "no FF001 diagnostic arrived")
  local diagnostic = flipflop_diagnostics(buf, "FF001")[1]
  result.diagnostic = {
    message = diagnostic.message,
    lnum = diagnostic.lnum,
    col = diagnostic.col,
    severity = diagnostic.severity,
  }
  step("diagnosed")

  local lsp_diagnostic = diagnostic.user_data.lsp
  local response = client:request_sync("textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = lsp_diagnostic.range,
    context = { diagnostics = { lsp_diagnostic }, only = { "quickfix" } },
  }, wait_ms, buf)
  assert(response and not response.err, "codeAction failed: " .. vim.inspect(response))
  local preferred = nil
  result.actions = {}
  for _, action in ipairs(response.result or {}) do
    table.insert(result.actions, action.title)
    if action.isPreferred then
      preferred = action
    end
  end
  assert(preferred, "no preferred quick fix among " .. vim.inspect(result.actions))
  result.applied = preferred.title
  vim.lsp.util.apply_workspace_edit(preferred.edit, client.offset_encoding)
  step("applied")

  local before = #published
  vim.cmd.write()
  step("written")
  result.buffer = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"

  local reanalysed = vim.wait(wait_ms, function()
    return #published > before
  end, 100)
  assert(reanalysed, "no diagnostics after the save")
  result.after_save = {}
  for _, d in ipairs(flipflop_diagnostics(buf)) do
    table.insert(result.after_save, { code = d.code, message = d.message })
  end
  step("reanalysed")

  client:stop()
  vim.wait(5000, function()
    return client:is_stopped()
  end, 50)
end

local ok, err = xpcall(run, debug.traceback)
result.ok = ok
result.error = ok and vim.NIL or tostring(err)
write_result()
vim.cmd("qall!")
