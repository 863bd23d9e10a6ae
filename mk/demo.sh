#!/bin/sh
# make demo: the README's first command.  Until the recorder and replayer
# land it shows the bundled seed-000 golden trace.
set -eu
B=${B:-build}
echo "== vmtrace dump tests/data/seed000-old.zst (two threads freeing a page the old way)"
"$B/vmtrace" dump tests/data/seed000-old.zst
