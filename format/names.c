/*
 * names.c - the name tables of libvmtrace: kind names, flag names (PROT_*,
 * MAP_*, MADV_*, ...) and errno names.  The op table is in ops.c.
 *
 * Flag values are the recording ABI's (linux_abi.h), not the build
 * machine's: a trace is rendered on machines other than the one that
 * recorded it.  errno numbers are written here for the same reason.
 */
#include <limits.h>
#include <string.h>

#include "linux_abi.h"
#include "vmtrace.h"

/* ---- Kinds -------------------------------------------------------------- */

static const char *const kind_names[VMT_EV__COUNT] = {
	[VMT_EV_SYSCALL] = "syscall",
	[VMT_EV_MAP_FILE] = "map_file",
	[VMT_EV_THREAD_START] = "thread_start",
	[VMT_EV_THREAD_EXIT] = "thread_exit",
	[VMT_EV_PROCESS_START] = "process_start",
	[VMT_EV_EXEC] = "exec",
	[VMT_EV_PROCESS_EXIT] = "process_exit",
	[VMT_EV_MAPS] = "maps",
	[VMT_EV_TOUCH] = "touch",
	[VMT_EV_FAULT] = "fault",
	[VMT_EV_STACK] = "stack",
	[VMT_EV_SYMBOL] = "symbol",
	[VMT_EV_STRING] = "string",
	[VMT_EV_LOST] = "lost",
	[VMT_EV_COUNTERS] = "counters",
};

const char *vmt_kind_name(uint32_t kind)
{
	return kind < VMT_EV__COUNT ? kind_names[kind] : NULL;
}

uint32_t vmt_kind_from_name(const char *name)
{
	if (!name)
		return 0;
	for (uint32_t k = 1; k < VMT_EV__COUNT; k++)
		if (kind_names[k] && strcmp(kind_names[k], name) == 0)
			return k;
	return 0;
}

/* ---- Flags -------------------------------------------------------------- */

/*
 * Bit tables hold no zero entry: a zero value is rendered by the caller's
 * `zero` word (PROT_NONE, ...).  Value tables (MAP type, MADV) do hold one,
 * which is harmless because tables end at the NULL name, not the 0 value.
 */
const struct vmt_flag_name vmt_prot_names[] = {
	{LX_PROT_READ, "PROT_READ"},
	{LX_PROT_WRITE, "PROT_WRITE"},
	{LX_PROT_EXEC, "PROT_EXEC"},
	{LX_PROT_SEM, "PROT_SEM"},
	{LX_PROT_GROWSDOWN, "PROT_GROWSDOWN"},
	{LX_PROT_GROWSUP, "PROT_GROWSUP"},
	{0, NULL},
};

/* The MAP_TYPE field (mask 0x0f) holds a value, not bits. */
const struct vmt_flag_name vmt_map_type_names[] = {
	{LX_MAP_SHARED, "MAP_SHARED"},
	{LX_MAP_PRIVATE, "MAP_PRIVATE"},
	{LX_MAP_SHARED_VALIDATE, "MAP_SHARED_VALIDATE"},
	{LX_MAP_DROPPABLE, "MAP_DROPPABLE"}, /* Linux 6.11 */
	{0, NULL},
};

/*
 * Bits outside MAP_TYPE.  The MAP_HUGE_* sizes (a 6-bit log2 field at bit
 * 26, meaningful only with MAP_HUGETLB) are not listed because they are
 * values that overlap MAP_UNINITIALIZED (bit 26); the renderer decodes
 * them.  MAP_32BIT is x86-only; on aarch64 bit 0x40 is unused.
 */
const struct vmt_flag_name vmt_map_flag_names[] = {
	{LX_MAP_FIXED, "MAP_FIXED"},
	{LX_MAP_ANONYMOUS, "MAP_ANONYMOUS"},
	{LX_MAP_32BIT, "MAP_32BIT"},
	{LX_MAP_GROWSDOWN, "MAP_GROWSDOWN"},
	{LX_MAP_DENYWRITE, "MAP_DENYWRITE"},
	{LX_MAP_EXECUTABLE, "MAP_EXECUTABLE"},
	{LX_MAP_LOCKED, "MAP_LOCKED"},
	{LX_MAP_NORESERVE, "MAP_NORESERVE"},
	{LX_MAP_POPULATE, "MAP_POPULATE"},
	{LX_MAP_NONBLOCK, "MAP_NONBLOCK"},
	{LX_MAP_STACK, "MAP_STACK"},
	{LX_MAP_HUGETLB, "MAP_HUGETLB"},
	{LX_MAP_SYNC, "MAP_SYNC"},
	{LX_MAP_FIXED_NOREPLACE, "MAP_FIXED_NOREPLACE"},
	{LX_MAP_UNINITIALIZED, "MAP_UNINITIALIZED"},
	{0, NULL},
};

const struct vmt_flag_name vmt_madv_names[] = {
	{LX_MADV_NORMAL, "MADV_NORMAL"},
	{LX_MADV_RANDOM, "MADV_RANDOM"},
	{LX_MADV_SEQUENTIAL, "MADV_SEQUENTIAL"},
	{LX_MADV_WILLNEED, "MADV_WILLNEED"},
	{LX_MADV_DONTNEED, "MADV_DONTNEED"},
	{LX_MADV_FREE, "MADV_FREE"},
	{LX_MADV_REMOVE, "MADV_REMOVE"},
	{LX_MADV_DONTFORK, "MADV_DONTFORK"},
	{LX_MADV_DOFORK, "MADV_DOFORK"},
	{LX_MADV_MERGEABLE, "MADV_MERGEABLE"},
	{LX_MADV_UNMERGEABLE, "MADV_UNMERGEABLE"},
	{LX_MADV_HUGEPAGE, "MADV_HUGEPAGE"},
	{LX_MADV_NOHUGEPAGE, "MADV_NOHUGEPAGE"},
	{LX_MADV_DONTDUMP, "MADV_DONTDUMP"},
	{LX_MADV_DODUMP, "MADV_DODUMP"},
	{LX_MADV_WIPEONFORK, "MADV_WIPEONFORK"},
	{LX_MADV_KEEPONFORK, "MADV_KEEPONFORK"},
	{LX_MADV_COLD, "MADV_COLD"},
	{LX_MADV_PAGEOUT, "MADV_PAGEOUT"},
	{LX_MADV_POPULATE_READ, "MADV_POPULATE_READ"},
	{LX_MADV_POPULATE_WRITE, "MADV_POPULATE_WRITE"},
	{LX_MADV_DONTNEED_LOCKED, "MADV_DONTNEED_LOCKED"},
	{LX_MADV_COLLAPSE, "MADV_COLLAPSE"},
	{LX_MADV_HWPOISON, "MADV_HWPOISON"},
	{LX_MADV_SOFT_OFFLINE, "MADV_SOFT_OFFLINE"},
	{LX_MADV_GUARD_INSTALL, "MADV_GUARD_INSTALL"},
	{LX_MADV_GUARD_REMOVE, "MADV_GUARD_REMOVE"},
	{0, NULL},
};

const struct vmt_flag_name vmt_mlock2_names[] = {
	{LX_MLOCK_ONFAULT, "MLOCK_ONFAULT"},
	{0, NULL},
};

const struct vmt_flag_name vmt_mcl_names[] = {
	{LX_MCL_CURRENT, "MCL_CURRENT"},
	{LX_MCL_FUTURE, "MCL_FUTURE"},
	{LX_MCL_ONFAULT, "MCL_ONFAULT"},
	{0, NULL},
};

const struct vmt_flag_name vmt_mremap_names[] = {
	{LX_MREMAP_MAYMOVE, "MREMAP_MAYMOVE"},
	{LX_MREMAP_FIXED, "MREMAP_FIXED"},
	{LX_MREMAP_DONTUNMAP, "MREMAP_DONTUNMAP"},
	{0, NULL},
};

const struct vmt_flag_name vmt_ms_names[] = {
	{LX_MS_ASYNC, "MS_ASYNC"},
	{LX_MS_INVALIDATE, "MS_INVALIDATE"},
	{LX_MS_SYNC, "MS_SYNC"},
	{0, NULL},
};

const struct vmt_flag_name vmt_shm_names[] = {
	{LX_SHM_RDONLY, "SHM_RDONLY"},
	{LX_SHM_RND, "SHM_RND"},
	{LX_SHM_REMAP, "SHM_REMAP"},
	{LX_SHM_EXEC, "SHM_EXEC"},
	{0, NULL},
};

/* ---- errno -------------------------------------------------------------- */

struct errno_entry {
	const char *name, *text;
};

/* asm-generic numbering (x86_64 and aarch64 share it); texts as glibc. */
static const struct errno_entry errno_table[] = {
	[1] = {"EPERM", "Operation not permitted"},
	[2] = {"ENOENT", "No such file or directory"},
	[3] = {"ESRCH", "No such process"},
	[4] = {"EINTR", "Interrupted system call"},
	[5] = {"EIO", "Input/output error"},
	[6] = {"ENXIO", "No such device or address"},
	[7] = {"E2BIG", "Argument list too long"},
	[8] = {"ENOEXEC", "Exec format error"},
	[9] = {"EBADF", "Bad file descriptor"},
	[10] = {"ECHILD", "No child processes"},
	[11] = {"EAGAIN", "Resource temporarily unavailable"},
	[12] = {"ENOMEM", "Cannot allocate memory"},
	[13] = {"EACCES", "Permission denied"},
	[14] = {"EFAULT", "Bad address"},
	[15] = {"ENOTBLK", "Block device required"},
	[16] = {"EBUSY", "Device or resource busy"},
	[17] = {"EEXIST", "File exists"},
	[18] = {"EXDEV", "Invalid cross-device link"},
	[19] = {"ENODEV", "No such device"},
	[20] = {"ENOTDIR", "Not a directory"},
	[21] = {"EISDIR", "Is a directory"},
	[22] = {"EINVAL", "Invalid argument"},
	[23] = {"ENFILE", "Too many open files in system"},
	[24] = {"EMFILE", "Too many open files"},
	[25] = {"ENOTTY", "Inappropriate ioctl for device"},
	[26] = {"ETXTBSY", "Text file busy"},
	[27] = {"EFBIG", "File too large"},
	[28] = {"ENOSPC", "No space left on device"},
	[29] = {"ESPIPE", "Illegal seek"},
	[30] = {"EROFS", "Read-only file system"},
	[31] = {"EMLINK", "Too many links"},
	[32] = {"EPIPE", "Broken pipe"},
	[33] = {"EDOM", "Numerical argument out of domain"},
	[34] = {"ERANGE", "Numerical result out of range"},
	[35] = {"EDEADLK", "Resource deadlock avoided"},
	[36] = {"ENAMETOOLONG", "File name too long"},
	[37] = {"ENOLCK", "No locks available"},
	[38] = {"ENOSYS", "Function not implemented"},
	[39] = {"ENOTEMPTY", "Directory not empty"},
	[40] = {"ELOOP", "Too many levels of symbolic links"},
/* 41 none */
	[42] = {"ENOMSG", "No message of desired type"},
	[43] = {"EIDRM", "Identifier removed"},
	[44] = {"ECHRNG", "Channel number out of range"},
	[45] = {"EL2NSYNC", "Level 2 not synchronized"},
	[46] = {"EL3HLT", "Level 3 halted"},
	[47] = {"EL3RST", "Level 3 reset"},
	[48] = {"ELNRNG", "Link number out of range"},
	[49] = {"EUNATCH", "Protocol driver not attached"},
	[50] = {"ENOCSI", "No CSI structure available"},
	[51] = {"EL2HLT", "Level 2 halted"},
	[52] = {"EBADE", "Invalid exchange"},
	[53] = {"EBADR", "Invalid request descriptor"},
	[54] = {"EXFULL", "Exchange full"},
	[55] = {"ENOANO", "No anode"},
	[56] = {"EBADRQC", "Invalid request code"},
	[57] = {"EBADSLT", "Invalid slot"},
/* 58 none */
	[59] = {"EBFONT", "Bad font file format"},
	[60] = {"ENOSTR", "Device not a stream"},
	[61] = {"ENODATA", "No data available"},
	[62] = {"ETIME", "Timer expired"},
	[63] = {"ENOSR", "Out of streams resources"},
	[64] = {"ENONET", "Machine is not on the network"},
	[65] = {"ENOPKG", "Package not installed"},
	[66] = {"EREMOTE", "Object is remote"},
	[67] = {"ENOLINK", "Link has been severed"},
	[68] = {"EADV", "Advertise error"},
	[69] = {"ESRMNT", "Srmount error"},
	[70] = {"ECOMM", "Communication error on send"},
	[71] = {"EPROTO", "Protocol error"},
	[72] = {"EMULTIHOP", "Multihop attempted"},
	[73] = {"EDOTDOT", "RFS specific error"},
	[74] = {"EBADMSG", "Bad message"},
	[75] = {"EOVERFLOW", "Value too large for defined data type"},
	[76] = {"ENOTUNIQ", "Name not unique on network"},
	[77] = {"EBADFD", "File descriptor in bad state"},
	[78] = {"EREMCHG", "Remote address changed"},
	[79] = {"ELIBACC", "Can not access a needed shared library"},
	[80] = {"ELIBBAD", "Accessing a corrupted shared library"},
	[81] = {"ELIBSCN", ".lib section in a.out corrupted"},
	[82] = {"ELIBMAX", "Attempting to link in too many shared libraries"},
	[83] = {"ELIBEXEC", "Cannot exec a shared library directly"},
	[84] = {"EILSEQ", "Invalid or incomplete multibyte or wide character"},
	[85] = {"ERESTART", "Interrupted system call should be restarted"},
	[86] = {"ESTRPIPE", "Streams pipe error"},
	[87] = {"EUSERS", "Too many users"},
	[88] = {"ENOTSOCK", "Socket operation on non-socket"},
	[89] = {"EDESTADDRREQ", "Destination address required"},
	[90] = {"EMSGSIZE", "Message too long"},
	[91] = {"EPROTOTYPE", "Protocol wrong type for socket"},
	[92] = {"ENOPROTOOPT", "Protocol not available"},
	[93] = {"EPROTONOSUPPORT", "Protocol not supported"},
	[94] = {"ESOCKTNOSUPPORT", "Socket type not supported"},
	[95] = {"EOPNOTSUPP", "Operation not supported"},
	[96] = {"EPFNOSUPPORT", "Protocol family not supported"},
	[97] = {"EAFNOSUPPORT", "Address family not supported by protocol"},
	[98] = {"EADDRINUSE", "Address already in use"},
	[99] = {"EADDRNOTAVAIL", "Cannot assign requested address"},
	[100] = {"ENETDOWN", "Network is down"},
	[101] = {"ENETUNREACH", "Network is unreachable"},
	[102] = {"ENETRESET", "Network dropped connection on reset"},
	[103] = {"ECONNABORTED", "Software caused connection abort"},
	[104] = {"ECONNRESET", "Connection reset by peer"},
	[105] = {"ENOBUFS", "No buffer space available"},
	[106] = {"EISCONN", "Transport endpoint is already connected"},
	[107] = {"ENOTCONN", "Transport endpoint is not connected"},
	[108] = {"ESHUTDOWN", "Cannot send after transport endpoint shutdown"},
	[109] = {"ETOOMANYREFS", "Too many references: cannot splice"},
	[110] = {"ETIMEDOUT", "Connection timed out"},
	[111] = {"ECONNREFUSED", "Connection refused"},
	[112] = {"EHOSTDOWN", "Host is down"},
	[113] = {"EHOSTUNREACH", "No route to host"},
	[114] = {"EALREADY", "Operation already in progress"},
	[115] = {"EINPROGRESS", "Operation now in progress"},
	[116] = {"ESTALE", "Stale file handle"},
	[117] = {"EUCLEAN", "Structure needs cleaning"},
	[118] = {"ENOTNAM", "Not a XENIX named type file"},
	[119] = {"ENAVAIL", "No XENIX semaphores available"},
	[120] = {"EISNAM", "Is a named type file"},
	[121] = {"EREMOTEIO", "Remote I/O error"},
	[122] = {"EDQUOT", "Disk quota exceeded"},
	[123] = {"ENOMEDIUM", "No medium found"},
	[124] = {"EMEDIUMTYPE", "Wrong medium type"},
	[125] = {"ECANCELED", "Operation canceled"},
	[126] = {"ENOKEY", "Required key not available"},
	[127] = {"EKEYEXPIRED", "Key has expired"},
	[128] = {"EKEYREVOKED", "Key has been revoked"},
	[129] = {"EKEYREJECTED", "Key was rejected by service"},
	[130] = {"EOWNERDEAD", "Owner died"},
	[131] = {"ENOTRECOVERABLE", "State not recoverable"},
	[132] = {"ERFKILL", "Operation not possible due to RF-kill"},
	[133] = {"EHWPOISON", "Memory page has hardware error"},
};

/*
 * Kernel-internal codes that never reach user space but that a tracer sees
 * in the return register at the exit stop of an interrupted syscall.
 */
static const struct errno_entry restart_table[] = {
	[0] = {"ERESTARTSYS", "To be restarted if SA_RESTART is set"},
	[1] = {"ERESTARTNOINTR", "To be restarted"},
	[2] = {"ERESTARTNOHAND", "To be restarted if no handler"},
	[3] = {"ENOIOCTLCMD", "No ioctl command"},
	[4] = {"ERESTART_RESTARTBLOCK", "Interrupted by signal"},
};

static const struct errno_entry *errno_lookup(int err)
{
	const size_t n = sizeof(errno_table) / sizeof(errno_table[0]);
	const size_t nr = sizeof(restart_table) / sizeof(restart_table[0]);

	/* Accept -errno too: results are stored negated. */
	if (err < 0 && err != INT_MIN)
		err = -err;
	if (err > 0 && (size_t)err < n && errno_table[err].name)
		return &errno_table[err];
	if (err >= 512 && (size_t)(err - 512) < nr)
		return &restart_table[err - 512];
	return NULL;
}

const char *vmt_errno_name(int err)
{
	const struct errno_entry *e = errno_lookup(err);

	return e ? e->name : NULL;
}

const char *vmt_errno_text(int err)
{
	const struct errno_entry *e = errno_lookup(err);

	return e ? e->text : NULL;
}
