/* The record the off-CPU tracer (offcpu.bpf.c) hands to ember, and its
 * configuration: the format both sides share (BPF C and user space). */
#ifndef EMBER_OFFCPU_RECORD_H
#define EMBER_OFFCPU_RECORD_H

#include <linux/types.h>

#define EMBER_OFFCPU_STACK_MAX 65536    /* user stack bytes copied at most (a power of two) */
#define EMBER_OFFCPU_CHUNK 4096         /* ... read a page at a time: the copy ends at the
                                         * first page that cannot be read (the stack's end) */
#define EMBER_OFFCPU_REG_WORDS 34       /* the kernel's saved user registers (struct pt_regs),
                                         * its first words: x86-64 21, AArch64 34 */
#define EMBER_OFFCPU_MAX_THREADS 65536
#define EMBER_OFFCPU_MAX_TARGETS 4096   /* processes traced */
#define EMBER_OFFCPU_RING_BYTES (32u << 20)

/* Set by ember before the tracer is attached. */
struct ember_offcpu_config {
	__u64 ns_dev, ns_ino; /* ember's pid namespace (/proc/self/ns/pid); ino 0: the root one */
	__u32 stack_size;   /* bytes of user stack to copy, <= EMBER_OFFCPU_STACK_MAX */
	__u32 regs_words;   /* words of struct pt_regs to copy, <= EMBER_OFFCPU_REG_WORDS */
};

enum ember_offcpu_kind { EMBER_OFFCPU_OUT = 1, EMBER_OFFCPU_IN = 2 };

/* A target thread left the CPU: what it stopped with.  key: its id in the
 * root pid namespace, which the interval's end (struct ember_offcpu_end)
 * names it by. */
struct ember_offcpu_record {
	__u32 kind;                /* EMBER_OFFCPU_OUT */
	__u32 key;
	__u32 pid, tid;            /* as ember's pid namespace numbers them */
	__u64 time_ns;             /* switched out (CLOCK_MONOTONIC) */
	__u32 stack_len;           /* bytes of stack[] copied, from the saved SP up */
	__u32 regs_ok;             /* the saved registers could be read */
	__u64 regs[EMBER_OFFCPU_REG_WORDS];
	__u8 stack[EMBER_OFFCPU_STACK_MAX + EMBER_OFFCPU_CHUNK];   /* only stack_len bytes are sent */
};

/* ... and got it again: the interval. */
struct ember_offcpu_end {
	__u32 kind;                /* EMBER_OFFCPU_IN */
	__u32 key;
	__u64 start_ns, end_ns;
};

/* Counters the tracer keeps (an array map of __u64, by this index). */
enum ember_offcpu_counter {
	EMBER_OFFCPU_SENT = 0,     /* intervals sent */
	EMBER_OFFCPU_DROPPED,      /* intervals lost: the ring was full */
	EMBER_OFFCPU_COUNTERS
};

#endif
