/*
 * signals.c - the recording's signals: SIGINT, SIGTERM and SIGHUP ask it
 * to stop, and a 50 ms interval timer (SIGALRM, no SA_RESTART) interrupts
 * the backend's wait so the writer can flush old events while the program
 * runs without recorded calls.  The handlers only set flags.
 */
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include "recording_int.h"

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t tick_due;

static void on_stop_signal(int sig)
{
	if (!stop_signal)
		stop_signal = sig;
}

static void on_alarm(int sig)
{
	(void)sig;
	tick_due = 1;
}

static const int stop_signals[VMR_NSTOP] = { SIGINT, SIGTERM, SIGHUP };

void vmr_signals_install(struct saved_signals *sv)
{
	struct sigaction sa;

	stop_signal = 0;
	tick_due = 0;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: the wait must return EINTR */
	sa.sa_handler = on_stop_signal;
	for (size_t i = 0; i < VMR_NSTOP; i++)
		sigaction(stop_signals[i], &sa, &sv->stop[i]);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, &sv->alrm);
	getitimer(ITIMER_REAL, &sv->timer);
}

/* Not from the start: a signal while the kernel verifies the stream
 * backend's programs makes it give up (EAGAIN), and on a loaded machine
 * verifying takes longer than a tick. */
void vmr_ticks_start(void)
{
	struct itimerval it = { { 0, 50000 }, { 0, 50000 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

void vmr_signals_restore(const struct saved_signals *sv)
{
	setitimer(ITIMER_REAL, &sv->timer, NULL);
	for (size_t i = 0; i < VMR_NSTOP; i++)
		sigaction(stop_signals[i], &sv->stop[i], NULL);
	sigaction(SIGALRM, &sv->alrm, NULL);
}

int vmr_stop_signal(void)
{
	return stop_signal;
}

int vmr_tick_take(void)
{
	if (!tick_due)
		return 0;
	tick_due = 0;
	return 1;
}
