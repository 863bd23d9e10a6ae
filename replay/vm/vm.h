/*
 * vm.h - vmreplay --kernel: the same replay on another kernel, booted
 * under qemu-system-x86_64 (vmreplay(1), Another kernel).
 *
 * The host writes an initramfs into a memfd: a static vmreplay as /init,
 * the trace at its own absolute path, the replay's command line, its
 * working directory and environment under /.vmreplay/.  No root
 * filesystem.  In the guest, /init (rp_guest_main) mounts /dev, /proc and
 * /sys, runs the replay as a child and sends everything back over the
 * second serial port (ttyS1, raw) as frames "@@T LEN\n" LEN bytes "\n":
 * H hello, U the kernel release, N the online CPUs, W a setting that
 * could not be set, O and E the replay's standard output and error as
 * they come, T a heartbeat every 2 s, M a message of /init's own, Q what
 * else ran in the guest meanwhile, J the --json file, X the exit status
 * (last).
 * Then it powers off.  The console (ttyS0) comes back on a pipe, for the
 * diagnosis of a guest that dies: its panic or out-of-memory line.
 *
 * Conventions as in replay.h: 0 or a negative errno, a message buffer,
 * no printing (the guest's output goes to the descriptors given), no
 * exits.
 */
#ifndef VMREPLAY_VM_H
#define VMREPLAY_VM_H

#include <stddef.h>
#include <stdint.h>
#include "replay.h"

/* What rp_vm_run reports to the program as it goes (for a display). */
enum rp_vm_what {
	RP_VM_BOOTING = 1, /* the guest is booting (about 4 times a second) */
	RP_VM_RETRY,	   /* KVM did not boot the guest in time; retrying with TCG */
	RP_VM_UP,	   /* the guest's userspace is up: release and cpus known */
	RP_VM_OUTPUT,	   /* about to write the guest's output (erase a display) */
};
struct rp_vm_status {
	int what;	     /* enum rp_vm_what */
	int accel;	     /* RP_VM_KVM or RP_VM_TCG: this attempt's */
	uint64_t elapsed_ns; /* since this attempt started */
	const char *release; /* RP_VM_UP: the guest's uname -r */
	unsigned cpus;	     /* RP_VM_UP: its online CPUs */
};
typedef void (*rp_vm_event_fn)(void *arg, const struct rp_vm_status *s);

struct rp_vm_config {
	const char *image;    /* the kernel image (an x86 bzImage) */
	const char *qemu;     /* qemu-system-x86_64 (a path, or a name looked up in PATH) */
	const char *guest;    /* the static vmreplay that becomes the guest's /init */
	const char *trace;    /* the trace, as named on the command line */
	char *const *argv;    /* the guest replay's command line (rp_guest_args) */
	const char *clock;    /* VMREPLAY_CLOCK for the guest, or NULL */
	unsigned cpus;	      /* >= 1 */
	uint64_t memory;      /* bytes */
	int accel;	      /* enum rp_vm_accel */
	unsigned timeout_s;   /* boot to power-off */
	char *const *sysctl;  /* "PATH=VALUE" files the guest's /init writes
				 before the replay (NULL-terminated), or NULL */
	const char *cmdline;  /* more of the guest kernel's command line, or NULL */
	int out_fd, err_fd;   /* the guest replay's standard output and error go here */
	int console_fd;	      /* a copy of the guest's console, or -1 */
	rp_vm_event_fn event; /* or NULL */
	void *event_arg;
};

/* The path of the guest's results file, to pass to rp_guest_args. */
#define RP_VM_GUEST_JSON "/.vmreplay/results.json"

struct rp_vm_result {
	int status;	       /* the guest replay's exit status */
	int accel;	       /* what the guest ran with: RP_VM_KVM or RP_VM_TCG */
	char release[65];      /* the guest's uname -r */
	unsigned cpus;	       /* its online CPUs */
	char version[160];     /* the image's version string (from its header) */
	char qemu[512];	       /* the qemu that ran it */
	char *json;	       /* the guest's --json file (malloc'd), or NULL */
	size_t json_len;
	uint64_t boot_ns;      /* qemu started to the guest's hello */
	uint64_t total_ns;     /* qemu started to its end */
	int input_error;       /* on failure: the image or the trace is at fault
				  (exit 2), not this machine or the guest */
	char unset[1024];      /* the sysctl files the guest could not write:
				  "PATH=VALUE: why; ..." ("" when all were) */
	/* What else ran in the guest while its vmreplay ran (have_noise:
	 * the guest said): the CPU time of its kernel threads, interrupts
	 * and /init, and how long that was, on how many CPUs. */
	int have_noise;
	uint64_t others_ns, elapsed_ns, replay_cpu_ns;
	unsigned noise_cpus;
	uint64_t qemu_cpu_ns;  /* qemu's own CPU time on this machine */
};

/* Boot c->image under qemu (KVM or TCG as c->accel says; with auto, KVM
 * first when /dev/kvm opens read-write, and TCG if its kernel has printed
 * nothing in 5 s or its /init has not said hello in 15 s), replay there,
 * and fill *r.  The guest's output is
 * written to c->out_fd and c->err_fd as it comes.  Returns 0 when the
 * guest replay ran to its end, whatever its exit status (r->status);
 * otherwise <0 with one line in msg: qemu missing or failing, an image
 * that is not a kernel, a guest that panicked, ran out of memory, hung
 * (no heartbeat for 60 s) or outlived c->timeout_s; qemu is then killed.
 * Free *r with rp_vm_result_free. */
int rp_vm_run(const struct rp_vm_config *c, struct rp_vm_result *r, char *msg, size_t msglen);
void rp_vm_result_free(struct rp_vm_result *r);

/* The guest's JSON with the host's facts added as "vm": {"image",
 * "image_version", "accel", "cpus", "memory_bytes", "qemu", "boot_ns",
 * "cmdline", "sysctl" (what was asked), "mm_unset" (what could not be
 * set, or null), "noise" ({"others_pct", "others_ns", "elapsed_ns",
 * "replay_cpu_ns"}, or null)}, into *out (reset first).  Returns 0, -EINVAL when the guest's JSON is
 * not an object, -ENOMEM. */
int rp_vm_json(const struct rp_vm_config *c, const struct rp_vm_result *r, struct vmt_buf *out);

/* Check that image is a kernel rp_vm_run can boot, and say what it is:
 * its version string (its boot header's, "" if none) and the memory the
 * kernel needs at boot (where it decompresses itself and runs).  Returns
 * 0, or <0 with msg ("'IMAGE': not a bootable x86 kernel image ..."). */
int rp_vm_image(const char *image, char *version, size_t vlen, uint64_t *need, char *msg,
		size_t msglen);

/* The static vmreplay for the guest: $VMREPLAY_STATIC if set, else
 * vmreplay-static beside this program, else ../lib/vmrec/vmreplay-static
 * from it.  Checks that it is a statically linked x86-64 executable.
 * Returns 0 with the path in out, or <0 with msg. */
int rp_vm_find_guest(const char *env, char *out, size_t outlen, char *msg, size_t msglen);

/* Find qemu: `name` itself if it has a '/', else the first executable of
 * that name in $PATH.  Returns 0 with the path in out, or -ENOENT with
 * msg. */
int rp_vm_find_qemu(const char *name, char *out, size_t outlen, char *msg, size_t msglen);

/* The guest's /init: PID 1 of the guest.  Never returns (powers off). */
int rp_guest_main(void);

/* Is this process the guest's /init (PID 1 started as /init)? */
int rp_guest_is_init(int argc, char **argv);

#endif
