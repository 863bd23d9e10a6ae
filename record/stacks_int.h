/*
 * stacks_int.h - what the stack table (stacks.c) and the unwinder
 * (stackunw.c) share.  Internal to record/.
 */
#ifndef VMREC_STACKS_INT_H
#define VMREC_STACKS_INT_H

#include "stacks.h"
#include "ehframe.h"
#include "symbolize.h"
#include "record_int.h"
#include "vmtutil.h"

#include <libunwind-ptrace.h>

#define STK_MC_SLOTS 16 /* memory cache: 16 blocks of 4 KiB */
#define STK_MC_BLOCK 4096u
#define STK_NREGS (UNW_X86_64_RIP + 1)
#define STK_MAX_FILES 256 /* module files kept open for reads */
#define STK_MEMO_SLOTS 1024 /* unwinds of copies remembered */
#define STK_MEMO_READS 128  /* what one may have read, at most */
/* A copy's unwind that reads in no file less than this above the copy's
 * end was cut by it: the stack went on. */
#define STK_PAST_COPY 65536u

/* One file-backed or executable mapping of a process. */
struct smap {
	uint64_t start, end, off;
	uint32_t module; /* VMT_NONE for anonymous code */
	int exec;
};

struct sproc {
	pid_t tgid;
	uint64_t serial; /* unique among the processes of a recording */
	unsigned ntasks;
	uint32_t gen; /* bumped by invalidate: UPT handles are rebuilt */
	struct smap *maps;
	size_t nmaps, capmaps;
	int maps_valid;
	int modelled; /* maps follow the trace (a copy's process), not /proc */
};

struct stask {
	pid_t tid;
	uint32_t proc;
	uint32_t gen;
	void *upt; /* NULL when unwinding a copy */
};

struct sstack {
	size_t off; /* into ips[] */
	uint32_t depth;
	uint64_t hash;
};

/* What the unwinding of a copy read of the registers and the copy. */
struct umread {
	uint32_t reg; /* libunwind's register number; STK_NREGS: a word of the copy */
	uint64_t addr, val;
};

/* An unwind of a copy and what it depended on: the process and its code
 * mappings (serial, gen), where the copy lies, and each register and
 * word of the copy read (anything else read is of the module files,
 * which the process's gen stands for).  Another copy equal in all those
 * unwinds to the same stack. */
struct umemo {
	uint64_t serial, ip, sp, lo, len, holes;
	uint32_t gen, id, depth, cut, nreads;
	struct umread *reads; /* NULL: an empty slot */
};

/* A module file open for reads of a copy's unwinding (fd < 0: none). */
struct mfile {
	int state; /* 0 not tried, 1 open, -1 could not be opened */
	int fd;
};

struct vmr_stacks {
	unsigned max_depth;
	unw_accessors_t acc;
	unw_addr_space_t as;
	uint64_t rules_of; /* the process whose unwind rules are cached */
	struct vmr_stacks_stats st;

	/* Processes by trace process index. */
	struct sproc **procs;
	size_t nprocs;
	struct stask **tasks;
	size_t ntasks, captasks;
	struct vmt_htab task_by_tid;

	/* interned stacks */
	uint64_t *ips;
	size_t nips, capips;
	struct sstack *stacks;
	size_t nstacks, capstacks;
	uint32_t *stab; /* id + 1, 0 = empty */
	size_t stabcap;

	struct vmr_syms *syms;	  /* where each distinct ip lives */
	struct vmr_maps mtext;	  /* scratch for read_maps */
	struct ehf_module *umods; /* unwind tables, by module index */
	size_t numods;
	struct mfile *mfiles;	  /* by module index */
	size_t nmfiles;
	unsigned files_open;

	/* the capture in progress */
	pid_t cur_tid;
	struct sproc *cur_p;
	uint64_t *frame; /* max_depth ips */
	int regs_ok;
	int maps_reread; /* this capture reread maps for an unknown ip */
	uint64_t ureg[STK_NREGS]; /* by libunwind register number */
	const unsigned char *copy; /* a copy of [copy_lo, +copy_len), or NULL */
	uint64_t copy_lo, copy_len;
	uint64_t copy_holes; /* vmr_stack_copy's holes */
	int past_copy; /* this unwind asked for stack above the copy's end */
	int no_pvr; /* process_vm_readv refused: use PTRACE_PEEKDATA */
	struct umemo *memo;	  /* STK_MEMO_SLOTS, or NULL (no memo) */
	struct umread rlog[STK_MEMO_READS]; /* what this copy's unwinding read */
	uint32_t nrlog;
	int rlog_on, rlog_full;
	uint32_t mgen;
	uint64_t proc_serial;	    /* of the last process made */
	uint64_t mc_proc;	    /* the cache holds this process's memory */
	uint32_t mc_pgen;	    /* at this gen */
	uint64_t mc_addr[STK_MC_SLOTS];
	uint32_t mc_gen[STK_MC_SLOTS];
	unsigned char mc_data[STK_MC_SLOTS][STK_MC_BLOCK];
};

/* stackunw.c: unwinding */
/* s->acc and s->as.  0 or -ENOMEM. */
int stk_init(struct vmr_stacks *s);
/* What stk_init made, and the module files kept open. */
void stk_fini(struct vmr_stacks *s);
/* A process, or NULL. */
struct sproc *stk_proc_new(struct vmr_stacks *s, pid_t tgid);
void stk_proc_free(struct sproc *p);
/* Its code may have changed: reread its mappings (unless modelled), drop
 * the unwind rules cached for it. */
void stk_proc_flush(struct vmr_stacks *s, struct sproc *p);
/* The mapping holding addr (code only when `code`), or NULL. */
const struct smap *stk_find_map(const struct sproc *p, uint64_t addr, int code);
/* The mapping holding the ip, reading p's mappings first if need be (and
 * again for an ip outside them, once a capture, unless p is modelled). */
const struct smap *stk_find_code(struct vmr_stacks *s, struct sproc *p, uint64_t ip, int *err);
/* Reread p's mappings from /proc.  0 or -errno. */
int stk_read_maps(struct vmr_stacks *s, struct sproc *p);
/* Unwind the task of p whose registers are in s->ureg (s->regs_ok) into
 * s->frame, reading memory from s->copy when set, else from task t->tid;
 * returns the depth (0 when it failed). */
uint32_t stk_unwind(struct vmr_stacks *s, struct sproc *p, struct stask *t);
/* The copy in s->copy/s->ureg unwinds as one remembered: 1 and its stack
 * id and depth, else 0 (and the next stk_unwind logs what it reads). */
int stk_memo_find(struct vmr_stacks *s, const struct sproc *p, uint32_t *id, uint32_t *depth,
		  int *cut);
/* Remember the unwind just done of s->copy as stack id of that depth. */
void stk_memo_put(struct vmr_stacks *s, const struct sproc *p, uint32_t id, uint32_t depth,
		  int cut);
void stk_memo_free(struct vmr_stacks *s);

#endif /* VMREC_STACKS_INT_H */
