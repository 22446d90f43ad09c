/* The BPF object compiled from offcpu.bpf.c (path given by the build as
 * EMBER_OFFCPU_BPF_OBJECT), embedded in ember's read-only data. */
__asm__(".section .rodata\n"
	".balign 8\n"
	".globl ember_offcpu_bpf_obj\n"
	".type ember_offcpu_bpf_obj, @object\n"
	"ember_offcpu_bpf_obj:\n"
	".incbin \"" EMBER_OFFCPU_BPF_OBJECT "\"\n"
	".globl ember_offcpu_bpf_obj_end\n"
	"ember_offcpu_bpf_obj_end:\n"
	".previous\n");
