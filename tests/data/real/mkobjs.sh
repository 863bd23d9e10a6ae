#!/bin/sh
# mkobjs.sh DIR N: N tiny C files f0.c .. f(N-1).c and main.c, compiled -O1 -c
set -e
D=${1:?dir}; N=${2:-1500}
mkdir -p "$D"; cd "$D"
i=0; while [ $i -lt $N ]; do echo "int f$i(int x){return x*$i+1;}" > f$i.c; i=$((i+1)); done
echo 'int main(void){return 0;}' > main.c
gcc -O1 -c f*.c main.c
