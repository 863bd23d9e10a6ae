/*
 * rt_entry.S - the inproc runtime's instructions that C cannot write: the
 * gate (the system call instruction the seccomp filter allows), the entry
 * of patched call sites, the clone-family call (the second allowed
 * instruction, where a child may come back on another stack), and
 * resumption from a signal frame.
 */
	.text

/* long rt_gate(long nr, long a0, ..., long a5) */
	.globl rt_gate
	.hidden rt_gate
	.type rt_gate, @function
rt_gate:
	mov %rdi, %rax
	mov %rsi, %rdi
	mov %rdx, %rsi
	mov %rcx, %rdx
	mov %r8, %r10
	mov %r9, %r8
	mov 8(%rsp), %r9
	syscall
	.globl rt_gate_ip
	.hidden rt_gate_ip
rt_gate_ip:
	ret
	.size rt_gate, . - rt_gate

/* The restorer of the runtime's signal handler. */
	.globl rt_restorer
	.hidden rt_restorer
	.type rt_restorer, @function
rt_restorer:
	mov $15, %eax
	syscall
	ud2
	.size rt_restorer, . - rt_restorer

/* vmrec's call of init at an exec stop returns here, and stops. */
	.globl rt_trap_ret
	.hidden rt_trap_ret
rt_trap_ret:
	int3
	ud2

/* A patched site jumps to its stub, which jumps here with the call's
 * number in %eax and the address to return to in %r11 (which, like %rcx,
 * a system call does not keep).  Every other register is as the syscall
 * instruction would have left it; the red zone below %rsp is skipped. */
	.globl rt_fast_entry
	.hidden rt_fast_entry
	.type rt_fast_entry, @function
rt_fast_entry:
	lea -128(%rsp), %rsp
	push %r11
	push %rbp
	mov %rsp, %rbp
	and $-16, %rsp
	push %r9
	push %r8
	push %r10
	push %rdx
	push %rsi
	push %rdi
	push %rax
	sub $8, %rsp
	lea 8(%rsp), %rdi
	call rt_fast
	add $16, %rsp
	pop %rdi
	pop %rsi
	pop %rdx
	pop %r10
	pop %r8
	pop %r9
	mov %rbp, %rsp
	pop %rbp
	pop %r11
	lea 128(%rsp), %rsp
	jmp *%r11
	.size rt_fast_entry, . - rt_fast_entry

/* long rt_clone_call(nr, a0, a1, a2, a3, a4, struct rt_cctx *c) */
	.globl rt_clone_call
	.hidden rt_clone_call
	.type rt_clone_call, @function
rt_clone_call:
	push %rbp
	mov %rsp, %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	mov 16(%rbp), %r12
	mov %rdi, %rax
	mov %rsi, %rdi
	mov %rdx, %rsi
	mov %rcx, %rdx
	mov %r8, %r10
	mov %r9, %r8
	mov %rsp, %r14
	mov (%r12), %r13
	test %r13, %r13
	jz 1f
	mov %r13, %rsp
1:	syscall
	.globl rt_clone_ip
	.hidden rt_clone_ip
rt_clone_ip:
	test %rax, %rax
	jz 4f
	js 3f
	test %r13, %r13
	jz 3f
	/* a vfork parent, back on the vfork stack: it resumes from there */
	mov 16(%r12), %rsp
	mov %r12, %rdi
	mov %rax, %rsi
	call rt_vfork_parent
	ud2
3:	mov %r14, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbp
	ret
4:	cmpq $0, 8(%r12)
	je 3b
	/* a child that resumes from its own frame */
	mov 16(%r12), %rsp
	mov %r12, %rdi
	call rt_child
	ud2
	.size rt_clone_call, . - rt_clone_call

/* void rt_resume(struct rt_ucontext *uc): rt_sigreturn from a frame the
 * runtime built (the kernel reads the frame's ucontext at %rsp). */
	.globl rt_resume
	.hidden rt_resume
	.type rt_resume, @function
rt_resume:
	mov %rdi, %rsp
	mov $15, %eax
	syscall
	ud2
	.size rt_resume, . - rt_resume

	.section .note.GNU-stack, "", @progbits
