/* The one /proc reader of ember: a process's memory map, its status
 * fields, and its small files.  Every function takes the pid of the target
 * (0: ember itself).  Not thread-safe only in that callbacks run on the
 * caller's thread. */
#ifndef EMBER_COMMON_PROC_H
#define EMBER_COMMON_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* One line of /proc/PID/maps. */
struct ember_proc_map {
	uint64_t lo, hi, offset, inode;
	char perms[5];             /* "r-xp" */
	const char *path;          /* "" for anonymous memory; "[vdso]", "[anon:NAME]", a file path
	                            * (" (deleted)" kept); valid during the callback only */
};

/* Call fn for every mapping of pid, in address order; it returns false to
 * stop.  Paths are as the process itself names its files, as the kernel's
 * perf records do: for a process under another root directory in ember's
 * mount namespace (chroot), the kernel shows them from ember's root
 * ("/srv/root/usr/lib/libc.so.6"), and that root's prefix is taken off.
 * 0, or -errno when the file cannot be read (-ENOENT: no such process). */
typedef bool (*ember_proc_map_fn)(void *arg, const struct ember_proc_map *m);
int ember_proc_maps(pid_t pid, ember_proc_map_fn fn, void *arg);
/* The same for the text of a maps file read from f (ember_proc_maps opens
 * /proc/PID/maps and parses it here; tests/fuzz feeds it any text).  Lines
 * that do not parse are skipped. */
void ember_proc_maps_parse(FILE *f, ember_proc_map_fn fn, void *arg);
/* The same, with root (as readlink(/proc/PID/root) gives it; NULL or "/":
 * none) taken off the front of every path under it. */
/* readlink of /proc/PID/NAME (pid 0: /proc/self/NAME) into buf,
 * NUL-terminated and cut at len - 1 bytes: its length, or -errno. */
ssize_t ember_proc_link(pid_t pid, const char *name, char *buf, size_t len);
/* pid's executable as the process names it (as in ember_proc_maps: a
 * chroot's prefix taken off; " (deleted)" dropped) into buf; its length, or
 * -errno. */
ssize_t ember_proc_exe(pid_t pid, char *buf, size_t len);
void ember_proc_maps_parse_in(FILE *f, const char *root, ember_proc_map_fn fn, void *arg);

/* Read /proc/PID/NAME (NAME: "cmdline", "comm", "stat", "task/TID/comm",
 * ...) into buf, NUL-terminated; its length (at most len - 1), or -errno. */
ssize_t ember_proc_read(pid_t pid, const char *name, char *buf, size_t len);

/* Call fn for each thread id listed in /proc/PID/task (in directory
 * order) until it returns false.  How many it was called for, or -errno
 * when the directory cannot be opened. */
typedef bool (*ember_proc_task_fn)(void *arg, uint32_t tid);
int ember_proc_tasks(pid_t pid, ember_proc_task_fn fn, void *arg);

/* Has pid ended: no such process, or a zombie (dead, not yet reaped)? */
bool ember_proc_gone(pid_t pid);

/* The value of field key ("NSpid", "Uid", "VmHWM") of /proc/PID/status,
 * leading blanks dropped, into buf; false when there is none. */
bool ember_proc_status(pid_t pid, const char *key, char *buf, size_t len);

/* Is pid a kernel thread (no user space: nothing to unwind or read)?  By
 * "Kthread: 1" in its status (Linux 6.0+), else the PF_KTHREAD bit of the
 * flags in its stat.  false when it cannot be read. */
bool ember_proc_kthread(pid_t pid);

/* The pid tracing pid (TracerPid of its status: a debugger, strace), 0
 * when none or unknown. */
pid_t ember_proc_tracer(pid_t pid);

/* A process's CPU time (user + system, all its threads) and resident set
 * from /proc/PID/stat; false when it cannot be read (gone). */
struct ember_proc_usage {
	double cpu_s;
	long rss_kib;
};
bool ember_proc_usage(pid_t pid, struct ember_proc_usage *u);

#endif
