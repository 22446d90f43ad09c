/* /proc readers (proc.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

static void proc_path(char *out, size_t len, pid_t pid, const char *name)
{
	if (pid)
		snprintf(out, len, "/proc/%d/%s", (int)pid, name);
	else
		snprintf(out, len, "/proc/self/%s", name);
}

ssize_t ember_proc_link(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	proc_path(path, sizeof path, pid, name);
	ssize_t n = readlink(path, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return n;
}

/* The length of the front of p that is root (under another root directory:
 * a chroot seen from ember's), 0 when none. */
static size_t root_prefix(const char *root, const char *p)
{
	size_t rlen = root && root[0] == '/' && root[1] ? strlen(root) : 0;
	return rlen && strncmp(p, root, rlen) == 0 && p[rlen] == '/' ? rlen : 0;
}

ssize_t ember_proc_exe(pid_t pid, char *buf, size_t len)
{
	char root[4096];
	if (ember_proc_link(pid, "root", root, sizeof root) < 0)
		root[0] = 0;
	ssize_t n = ember_proc_link(pid, "exe", buf, len);
	if (n < 0)
		return n;
	if (n > 10 && strcmp(buf + n - 10, " (deleted)") == 0)
		buf[n -= 10] = 0;
	size_t skip = root_prefix(root, buf);
	memmove(buf, buf + skip, (size_t)n - skip + 1);
	return n - (ssize_t)skip;
}

int ember_proc_maps(pid_t pid, ember_proc_map_fn fn, void *arg)
{
	char path[64];
	char root[4096];
	if (ember_proc_link(pid, "root", root, sizeof root) < 0)
		root[0] = 0;
	proc_path(path, sizeof path, pid, "maps");
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	ember_proc_maps_parse_in(f, root, fn, arg);
	fclose(f);
	return 0;
}

void ember_proc_maps_parse(FILE *f, ember_proc_map_fn fn, void *arg)
{
	ember_proc_maps_parse_in(f, NULL, fn, arg);
}

void ember_proc_maps_parse_in(FILE *f, const char *root, ember_proc_map_fn fn, void *arg)
{
	char line[4400];
	while (fgets(line, sizeof line, f)) {
		struct ember_proc_map m = { 0 };
		unsigned dmaj, dmin;
		int pos = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n", &m.lo, &m.hi, m.perms,
			   &m.offset, &dmaj, &dmin, &m.inode, &pos) < 7 || !pos)
			continue;
		char *p = line + pos;
		p[strcspn(p, "\n")] = 0;
		p += root_prefix(root, p);
		m.path = p;
		if (!fn(arg, &m))
			break;
	}
}

ssize_t ember_proc_read(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[96];
	proc_path(path, sizeof path, pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = 0;
	while (n + 1 < len) {
		ssize_t got = read(fd, buf + n, len - 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

int ember_proc_tasks(pid_t pid, ember_proc_task_fn fn, void *arg)
{
	char path[64];
	proc_path(path, sizeof path, pid, "task");
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int n = 0;
	for (struct dirent *de; (de = readdir(d));) {
		char *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);
		if (end == de->d_name || *end || tid == 0 || tid > UINT32_MAX)
			continue;   /* "." and ".." */
		n++;
		if (!fn(arg, (uint32_t)tid))
			break;
	}
	closedir(d);
	return n;
}

bool ember_proc_gone(pid_t pid)
{
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return true;
	char buf[256];
	if (ember_proc_read(pid, "stat", buf, sizeof buf) <= 0)
		return true;
	/* "PID (COMM) STATE ...": the state follows the last ')'. */
	const char *st = strrchr(buf, ')');
	return st && (st[2] == 'Z' || st[2] == 'X');
}

#define PF_KTHREAD_FLAG 0x00200000u   /* include/linux/sched.h */

bool ember_proc_kthread(pid_t pid)
{
	char v[32], buf[1024];
	if (ember_proc_status(pid, "Kthread", v, sizeof v))
		return atoi(v) == 1;
	unsigned flags;
	if (ember_proc_read(pid, "stat", buf, sizeof buf) <= 0)
		return false;
	/* After "PID (COMM)": state is field 3, flags field 9. */
	const char *st = strrchr(buf, ')');
	return st && sscanf(st + 1, " %*c %*d %*d %*d %*d %*d %u", &flags) == 1 && (flags & PF_KTHREAD_FLAG);
}

pid_t ember_proc_tracer(pid_t pid)
{
	char v[32];
	return ember_proc_status(pid, "TracerPid", v, sizeof v) ? (pid_t)atoi(v) : 0;
}

bool ember_proc_usage(pid_t pid, struct ember_proc_usage *u)
{
	char buf[1024];
	unsigned long long utime, stime;
	long rss_pages, tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	if (ember_proc_read(pid, "stat", buf, sizeof buf) <= 0)
		return false;
	/* The fields after "PID (COMM)" (a name may hold blanks and parentheses:
	 * it ends at the last ')'): state is field 3, utime 14, stime 15, rss 24. */
	const char *st = strrchr(buf, ')');
	if (!st || sscanf(st + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
			  "%*u %*u %ld", &utime, &stime, &rss_pages) != 3)
		return false;
	u->cpu_s = (double)(utime + stime) / (double)(tick > 0 ? tick : 100);
	u->rss_kib = rss_pages * (page > 0 ? page : 4096) / 1024;
	return true;
}

bool ember_proc_status(pid_t pid, const char *key, char *buf, size_t len)
{
	char path[64], line[1024];
	size_t klen = strlen(key);
	bool found = false;
	proc_path(path, sizeof path, pid, "status");
	FILE *f = fopen(path, "re");
	while (f && !found && fgets(line, sizeof line, f)) {
		if (strncmp(line, key, klen) != 0 || line[klen] != ':')
			continue;
		const char *v = line + klen + 1;
		v += strspn(v, " \t");
		snprintf(buf, len, "%.*s", (int)strcspn(v, "\n"), v);
		found = true;
	}
	if (f)
		fclose(f);
	return found;
}
