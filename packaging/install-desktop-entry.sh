#!/bin/sh
# Install the Cite-Assist desktop entry and icon for the current user (Linux, freedesktop).
# Usage: packaging/install-desktop-entry.sh   (assistant-gui must be on PATH, e.g. the venv's bin)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
install -Dm644 "$here/cite-assist.desktop" "$data/applications/cite-assist.desktop"
install -Dm644 "$here/cite-assist.svg" "$data/icons/hicolor/scalable/apps/cite-assist.svg"
install -Dm644 "$here/cite-assist.png" "$data/icons/hicolor/256x256/apps/cite-assist.png"
if command -v assistant-gui >/dev/null 2>&1; then
  sed -i "s|^Exec=assistant-gui|Exec=$(command -v assistant-gui)|; s|^TryExec=assistant-gui|TryExec=$(command -v assistant-gui)|" \
    "$data/applications/cite-assist.desktop"
fi
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database "$data/applications" || true
echo "installed $data/applications/cite-assist.desktop"
