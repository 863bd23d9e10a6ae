/*
 * handoff.c - vmrec's exit, not waited for on what it releases.
 *
 * A process's exit unmaps its memory and closes its descriptors before
 * its parent learns of it: for the stream backend the ring's 32 MiB
 * mapping, the BPF object, maps and programs, 5-8 ms between the trace's
 * last byte and the shell's next command.  vmr_exit_handoff() clones a
 * process that shares vmrec's memory, holds a copy of its descriptors
 * (less the standard streams, so that whoever reads vmrec's output sees
 * its end with vmrec's exit) and dies with vmrec (its parent-death
 * signal): vmrec's exit then only drops references, and the memory and
 * descriptors are let go in the sharer's exit, just after.  Among them
 * is the keeper's pipe (keeper.c): the keeper's detach of the links
 * comes after that.
 */
#include <errno.h>
#include <signal.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "recording_int.h"

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)

/* The sharer runs on vmrec's memory, vmrec's thread pointer included:
 * it makes its system calls itself, so that no errno of vmrec's is
 * written, and touches nothing but its own stack. */
static long raw2(long nr, long a, long b)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return ret;
}

static pid_t sharer_parent;
static unsigned char sharer_stack[8192] __attribute__((aligned(64)));

static int sharer(void *arg)
{
	(void)arg;
	raw2(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
	if (raw2(SYS_getppid, 0, 0) != sharer_parent)
		raw2(SYS_exit, 0, 0); /* vmrec is gone already */
	for (int fd = 0; fd < 3; fd++)
		raw2(SYS_close, fd, 0);
	/* (every signal blocked: only SIGKILL ends it) */
	for (;;)
		raw2(SYS_pause, 0, 0);
	return 0;
}

int vmr_exit_handoff(void)
{
	sigset_t all, old;

	sharer_parent = getpid();
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	int pid = clone(sharer, sharer_stack + sizeof(sharer_stack), CLONE_VM | SIGCHLD, NULL);
	int e = pid < 0 ? -errno : 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return e;
}

#else

/* (Under AddressSanitizer vmrec frees everything itself, for its leak
 * check; elsewhere the exit is vmrec's own.) */
int vmr_exit_handoff(void)
{
	return -ENOSYS;
}

#endif
