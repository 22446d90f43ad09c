/* The BPF object compiled from copier.bpf.c (path given by the
 * build as EMBER_COPIER_BPF_OBJECT), embedded in ember's read-only data. */
__asm__(".section .rodata\n"
	".balign 8\n"
	".globl ember_copier_bpf_obj\n"
	".type ember_copier_bpf_obj, @object\n"
	"ember_copier_bpf_obj:\n"
	".incbin \"" EMBER_COPIER_BPF_OBJECT "\"\n"
	".globl ember_copier_bpf_obj_end\n"
	"ember_copier_bpf_obj_end:\n"
	".previous\n");
