#!/usr/bin/env bash
# install-npm.sh NAME PACKAGE[@VERSION]...: installs into npm/NAME, records time and size.
set -u
name=$1; shift
dir=/work/wt/clis/npm/$name
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"name":"x-'"$name"'","private":true}' > "$dir/package.json"
start=$(date +%s)
npm install --prefix "$dir" --no-audit --no-fund --save-exact --loglevel=error "$@" > /work/wt/clis/logs/install-$name.log 2>&1
rc=$?
end=$(date +%s)
size=$(du -sh "$dir/node_modules" 2>/dev/null | cut -f1)
echo "$name rc=$rc secs=$((end-start)) size=$size pkgs=$*" >> /work/wt/clis/logs/install-summary.txt
