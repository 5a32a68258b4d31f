-- Neovim's built-in LSP client through what a user does with citations (keys only, no models):
-- complete in \cite{ and [@, accept (the item's text edit, then its command: the .bib entry is
-- added through Neovim's own workspace/applyEdit), hover, definition, references, rename.
-- Writes one JSON object of step -> result; run by tools/nvim_lsp_check.sh (Neovim 0.7+).
local cmd = vim.fn.json_decode(os.getenv("CITE_ASSIST_LSP_CMD"))
local folder = os.getenv("CITE_ASSIST_FOLDER")
local result_path = os.getenv("CITE_ASSIST_RESULT")
local out = { steps = {} }

local function finish()
  local f = io.open(result_path, "w")
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd("qa!")
end

local function step(name, ok, detail)
  out.steps[name] = { ok = ok and true or false, detail = detail }
end

local keys_ready = false
local config = {
  name = "cite-assist",
  cmd = cmd,
  root_dir = folder,
  handlers = {
    ["citeAssist/status"] = function(_, result)
      if result.state == "keys" then keys_ready = true end
    end,
  },
}
local client_id = vim.lsp.start_client(config)
local client = vim.lsp.get_client_by_id(client_id)

local function open(name)
  vim.cmd("edit " .. vim.fn.fnameescape(folder .. "/" .. name))
  local buf = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(buf, client_id)
  return buf
end

local function request(buf, method, params)
  local responses = vim.lsp.buf_request_sync(buf, method, params, 60000) or {}
  for _, response in pairs(responses) do
    return response.result, response.error
  end
end

local function position_of(buf, needle, shift)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local s = line:find(needle, 1, true)
    if s then return { line = i - 1, character = vim.str_utfindex(line, s - 1 + shift) } end
  end
end

local tex = open("paper.tex")
if not vim.wait(120000, function() return keys_ready end, 100) then
  step("start", false, "no citeAssist/status keys within 2 minutes")
  return finish()
end
local uri = vim.uri_from_bufnr(tex)

-- complete in \cite{ and accept the first item: its text edit, then its command (.bib entry)
local pos = position_of(tex, "\\cite{}", #"\\cite{")
local list = request(tex, "textDocument/completion", { textDocument = { uri = uri }, position = pos })
local items = list and (list.items or list) or {}
table.sort(items, function(a, b) return (a.sortText or a.label) < (b.sortText or b.label) end)
local first = items[1]
step("complete_cite", first ~= nil, first and first.label)
if not first then return finish() end
local key = first.label
vim.lsp.util.apply_text_edits({ first.textEdit }, tex, "utf-16")
if first.command then
  local done = false
  client.request("workspace/executeCommand", first.command, function() done = true end, tex)
  vim.wait(60000, function() return done end, 50)
end
vim.cmd("silent! wall")
local bib = io.open(folder .. "/refs.bib")
local bib_text = bib and bib:read("*a") or ""
if bib then bib:close() end
step("accept_adds_bib_entry", bib_text:find("{" .. key .. ",", 1, true) ~= nil, key)

-- hover, definition and references on the cited key
local at = position_of(tex, key, 1)
local where = { textDocument = { uri = uri }, position = at }
local hover = request(tex, "textDocument/hover", where)
local hover_text = hover and hover.contents and (hover.contents.value or vim.inspect(hover.contents)) or ""
step("hover", #hover_text > 20, hover_text:sub(1, 80))
local def = request(tex, "textDocument/definition", where)
local def_uri = def and (def.uri or (def[1] and (def[1].uri or def[1].targetUri)))
step("definition", def_uri ~= nil and def_uri:match("refs%.bib$") ~= nil, def_uri)
local refs = request(tex, "textDocument/references",
  { textDocument = where.textDocument, position = at, context = { includeDeclaration = true } })
step("references", refs ~= nil and #refs >= 2, refs and #refs)

-- rename the key: every citation and the .bib entry
local edit = request(tex, "textDocument/rename",
  { textDocument = where.textDocument, position = at, newName = "renamed2024" })
if edit then vim.lsp.util.apply_workspace_edit(edit, "utf-16") end
local line = table.concat(vim.api.nvim_buf_get_lines(tex, 0, -1, false), "\n")
step("rename", line:find("\\cite{renamed2024}", 1, true) ~= nil, edit and vim.tbl_count(edit.changes or {}))

-- Pandoc [@ in a Markdown file
local md = open("notes.md")
local md_pos = position_of(md, "[@", 2)
local md_list = request(md, "textDocument/completion",
  { textDocument = { uri = vim.uri_from_bufnr(md) }, position = md_pos })
local md_items = md_list and (md_list.items or md_list) or {}
step("complete_pandoc", #md_items > 0, #md_items)
finish()
