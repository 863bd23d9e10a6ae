#!/bin/sh
# run-qemu.sh TRACE: QEMU 7.2 with -overcommit mem-lock=on (mlockall
# MCL_CURRENT|MCL_FUTURE), 128 MiB guest, no devices, quit after 3 s.
V=${V:-build}
(sleep 3; echo quit) | $V/vmrec --stacks --force -o "${1:?trace}" -- qemu-system-x86_64 -M pc -m 128 \
    -nodefaults -display none -overcommit mem-lock=on -monitor stdio -accel kvm >/dev/null
