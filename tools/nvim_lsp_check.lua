-- A real editor against `assistant lsp`: Neovim's built-in LSP client opens the sample draft,
-- waits for the models, asks for completions inside `\cite{}` and writes what arrived as JSON.
-- Run by tools/nvim_lsp_check.sh (works with Neovim 0.7 from Debian 12 and newer).
local cmd = vim.fn.json_decode(os.getenv("CITE_ASSIST_LSP_CMD"))
local draft = os.getenv("CITE_ASSIST_DRAFT")
local result_path = os.getenv("CITE_ASSIST_RESULT")
local out = { nvim = vim.version(), state = nil, labels = {}, details = {}, error = nil }

local function finish()
  local f = io.open(result_path, "w")
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd("qa!")
end

vim.cmd("edit " .. vim.fn.fnameescape(draft))
local buf = vim.api.nvim_get_current_buf()
local config = {
  name = "cite-assist",
  cmd = cmd,
  root_dir = vim.fn.fnamemodify(draft, ":p:h"),
  handlers = {
    ["citeAssist/status"] = function(_, result)
      if result.state == "ready" or result.state == "failed" then
        out.state = result.state
        out.message = result.message
      end
    end,
  },
}
local client_id
if vim.lsp.start then
  client_id = vim.lsp.start(config)
else
  client_id = vim.lsp.start_client(config)
  vim.lsp.buf_attach_client(buf, client_id)
end
if not client_id then
  out.error = "the LSP client did not start"
  return finish()
end

if not vim.wait(900000, function() return out.state ~= nil end, 200) then
  out.error = "no citeAssist/status ready within 15 minutes"
  return finish()
end

-- the empty \cite{} of the draft: the cursor right after its "{"
local row, col
for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
  local s = line:find("\\cite{}", 1, true)
  if s then
    row, col = i - 1, vim.str_utfindex(line, s - 1 + #"\\cite{")
    break
  end
end
if not row then
  out.error = "no \\cite{} in the draft"
  return finish()
end
local params = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = row, character = col } }
local responses, err = vim.lsp.buf_request_sync(buf, "textDocument/completion", params, 120000)
if not responses then
  out.error = "completion request failed: " .. tostring(err)
  return finish()
end
for _, response in pairs(responses) do
  if response.error then
    out.error = vim.inspect(response.error)
  end
  local items = response.result and (response.result.items or response.result) or {}
  table.sort(items, function(a, b) return (a.sortText or a.label) < (b.sortText or b.label) end)
  for _, item in ipairs(items) do
    table.insert(out.labels, item.label)
    table.insert(out.details, item.detail or "")
  end
end
finish()
