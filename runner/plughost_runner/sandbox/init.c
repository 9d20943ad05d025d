/*
 * plughost-init: pid 1 of a forked runner's pid namespace, as a small native program.
 *
 * The Python init (plughost_runner/sandbox/pidns.py) forks the runner, which is
 * pid 2, and then execs this program, so that the init holds a few hundred KiB
 * instead of a copy of the fork server's interpreter. It keeps doing the
 * init's job, and nothing else:
 *
 *   - reap every child, the orphans the kernel hands to pid 1 included, so no
 *     zombie stays in the namespace;
 *   - pass SIGTERM, SIGINT and SIGHUP on to the runner: as the namespace's init
 *     it would otherwise drop them when they come from outside;
 *   - when the runner ends, write its wait status to REPORT_FD (one native int,
 *     as the Python init does) and exit, which ends every process left in the
 *     namespace;
 *   - exit as soon as SERVER_FD, a pidfd of the fork server, becomes readable
 *     (the fork server has died), ending the namespace with it.
 *
 * Its first step makes it non-dumpable again: exec made it dumpable, and a
 * dumpable init of the runner's own uid lets the runner's plugin code open its
 * /proc/1/mem and /proc/1/fd (where Landlock is not there to refuse it) and so
 * act as a process with none of the runner's seccomp filter, or forge its report.
 *
 * Usage: plughost-init REPORT_FD SERVER_FD RUNNER_PID. The Python side passes
 * exactly those two descriptors across exec and closes every other one.
 * Built by scripts/bootstrap.sh with nothing beyond libc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP};

/* Parse a non-negative decimal argument; -1 when it is not one. */
static long number(const char *text) {
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    return (errno || *text == '\0' || *end != '\0' || value < 0) ? -1 : value;
}

/* The code this init exits with once the runner ended with STATUS. */
static int exit_code(int status) {
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status); /* pid 1 cannot usefully signal itself */
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* Reap every child that has ended; return 1 and fill *status once the runner has. */
static int reap(pid_t runner, int *status) {
    for (;;) {
        int wstatus;
        pid_t pid = waitpid(-1, &wstatus, WNOHANG);
        if (pid == runner) {
            *status = wstatus;
            return 1;
        }
        if (pid == 0 || (pid < 0 && errno != EINTR)) {
            return 0; /* nothing more now (or, impossibly, no child at all) */
        }
    }
}

int main(int argc, char **argv) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        return 1;
    }
    if (argc != 4) {
        return 2;
    }
    long report = number(argv[1]), server = number(argv[2]), runner = number(argv[3]);
    if (report < 0 || server < 0 || runner <= 0) {
        return 2;
    }
    /* Signals arrive as reads on a signalfd. Blocked signals are queued even for
     * a namespace's init, which would drop them under the default disposition. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) {
        sigaddset(&set, forwarded[i]);
    }
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        return 1;
    }
    int signals = signalfd(-1, &set, SFD_CLOEXEC);
    if (signals < 0) {
        return 1;
    }
    struct pollfd watched[2] = {{.fd = signals, .events = POLLIN}, {.fd = (int)server, .events = POLLIN}};
    int status;
    /* The runner may have ended before the exec: its zombie waits, its SIGCHLD does not. */
    while (!reap((pid_t)runner, &status)) {
        if (poll(watched, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return 1;
        }
        if (watched[1].revents) {
            return 1; /* the fork server is gone: so is everything in the namespace */
        }
        /* One signal per wake-up: poll returns at once while more are queued. */
        struct signalfd_siginfo info;
        if (read(signals, &info, sizeof info) == (ssize_t)sizeof info && info.ssi_signo != SIGCHLD) {
            kill((pid_t)runner, (int)info.ssi_signo);
        }
    }
    ssize_t written;
    do {
        written = write((int)report, &status, sizeof status);
    } while (written < 0 && errno == EINTR);
    return exit_code(status);
}
