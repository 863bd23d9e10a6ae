#!/bin/bash
# mkrepo.sh DIR: a git repository with 2064 loose objects (2000 small files in
# 20 directories, two commits), as used for tests/data/real/git-loose.zst
set -e
D=${1:?dir}; rm -rf "$D"; mkdir -p "$D"; cd "$D"
git init -q . && git config user.email a@b && git config user.name survey
for d in $(seq 0 19); do mkdir -p d$d; for i in $(seq 0 99); do echo "file $d $i $RANDOM" > d$d/f$i.txt; done; done
git add -A && git commit -qm one
for i in $(seq 0 19); do echo change $i >> d$i/f1.txt; done
git commit -qam two
git count-objects -v | head -1
