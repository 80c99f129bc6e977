/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The contract between user space and the BPF CPython walker (python.bpf.h).
 *
 * User space turns a row of offsets/cpython.json (plus what it learns from the
 * target at attach: addresses, the TSD slot) into one struct pyebpf_py_proc per
 * target process. BPF only follows pointers and copies integers: per frame it
 * records (code object address, instruction byte offset, code tag). Names,
 * files and line numbers are resolved in user space.
 */
#ifndef PYEBPF_PYTHON_H
#define PYEBPF_PYTHON_H

#include "common.h"

#define PYEBPF_MAX_FRAMES	128   /* frames kept per stack (power of two) */
#define PYEBPF_MAX_FRAME_VISITS 160   /* frames visited per walk, skipped shims included */
#define PYEBPF_MAX_THREAD_WALK	256   /* thread-list entries visited in the slow path, unrolled */
#define PYEBPF_MAX_THREAD_LOOP	16384 /* the same with bpf_loop: a 500-thread service's oldest threads are last */
#define PYEBPF_FRAME_WINDOW	128   /* bytes of one frame that hold every field the walker reads */
#define PYEBPF_FRAME_BLOCK	4096  /* bytes of a thread's data stack read in one go (3.11+) */
#define PYEBPF_PAGE_SIZE	4096  /* smallest page: the page of a mapped byte is mapped whole */
#define PYEBPF_CODE_TAG_LEN	32    /* bytes of immutable code header hashed into the tag */
#define PYEBPF_CODE_WINDOW	128   /* bytes of a code object read per frame: ob_type through the tag */
#define PYEBPF_CODE_MEMO	256   /* code objects remembered per CPU (power of two), python.bpf.h */
#define PYEBPF_TSTATE_WINDOW	128   /* bytes of a thread state read to find its interpreter and frame */
#define PYEBPF_NO_OFFSET	0xffff
#define PYEBPF_NO_TSS_SLOT	0x7fffffff

/* How a frame says which instruction it is executing. */
enum pyebpf_instr_kind {
	PYEBPF_INSTR_LASTI_BYTES = 0, /* 3.8, 3.9: int f_lasti, a byte offset */
	PYEBPF_INSTR_LASTI_UNITS = 1, /* 3.10: int f_lasti, in 2-byte code units */
	PYEBPF_INSTR_POINTER = 2,     /* 3.11+: pointer into co_code_adaptive */
};

/* Per CPython minor version; every offset in bytes, PYEBPF_NO_OFFSET if absent. */
struct pyebpf_py_layout {
	__u16 runtime_interp_head; /* _PyRuntimeState.interpreters.head */
	__u16 interp_threads_head; /* PyInterpreterState.threads.head / tstate_head */
	__u16 tstate_next;
	__u16 tstate_thread_id;	      /* pthread_t, equal to the thread's TLS pointer */
	__u16 tstate_frame;	      /* ->frame (<=3.10), ->cframe (3.11/3.12), ->current_frame (3.13) */
	__u16 cframe_current_frame;   /* _PyCFrame.current_frame, or NO_OFFSET without a cframe */
	__u16 frame_code;	      /* f_code / f_executable */
	__u16 frame_back;	      /* f_back / previous */
	__u16 frame_instr;	      /* f_lasti / prev_instr / instr_ptr */
	__u16 frame_owner;	      /* _PyInterpreterFrame.owner, or NO_OFFSET */
	__u16 frame_window;	      /* bytes to read per frame: covers every frame field above */
	__u16 code_adaptive;	      /* offset of co_code_adaptive (instruction pointers are relative to it) */
	__u16 code_tag;		      /* start of immutable integer header fields (co_flags/co_argcount..) */
	__u16 object_type;	      /* PyObject.ob_type */
	__u16 tstate_interp;	      /* PyThreadState.interp, below tstate_frame; with: */
	__u16 interp_code_generation; /* PyInterpreterState._code_object_generation (3.14+): counts
					 freed code objects; NO_OFFSET where the target has none */
	__u8 code_tag_len;	      /* bytes of it to hash, <= PYEBPF_CODE_TAG_LEN */
	__u8 instr_kind;	      /* enum pyebpf_instr_kind */
	__u8 owner_cstack;	      /* owner values >= this are not Python frames (C stack / interpreter
				       shims); 0xff = none */
	__u8 frames_stacked;	      /* 1: a caller's frame lies below its callee's on the thread's data
				       stack (3.11+), so one read of the memory below a frame brings
				       the frames of its callers with it */
	__u8 pad[4];
};

/* Per target process; key of the py_procs map is the host tgid. */
struct pyebpf_py_proc {
	struct pyebpf_py_layout layout;
	__s32 tss_slot;	   /* thread pointer + tss_slot holds the thread's bound PyThreadState*,
	                              found at attach; PYEBPF_NO_TSS_SLOT = use the thread-list walk */
	__u32 image;	   /* nonzero, new for every process user space attaches to, forks
			      included: with the tgid, tells what BPF remembers of one apart from
			      a later process under that pid (an exec'd successor, or a fork of
			      the same parent that reuses the pid) */
	__u64 runtime;	   /* &_PyRuntime in the target */
	__u64 code_type;   /* &PyCode_Type in the target: frames whose code is not one are skipped */
	__u64 main_interp; /* the main PyInterpreterState (never freed while the process lives);
			      0 = code objects are not remembered across walks */
};

struct pyebpf_py_frame {
	__u64 code;  /* PyCodeObject* in the target */
	__s32 instr; /* byte offset of the executing instruction in the bytecode */
	__u32 tag;   /* pyebpf_code_tag() of the code header: detects a reused code address */
};

enum pyebpf_stack_status {
	PYEBPF_STACK_OK = 0,
	PYEBPF_STACK_NO_TSTATE = 1,  /* not a Python thread */
	PYEBPF_STACK_READ_FAULT = 2, /* target memory unreadable mid-walk: frames so far are kept */
	PYEBPF_STACK_NOT_WALKED = 3, /* walking disabled or below a threshold */
	PYEBPF_STACK_FRAME_LOOP = 4, /* the frame chain leads back to a frame already visited */
};

struct pyebpf_py_stack {
	__u16 depth;	/* frames[0..depth) valid, leaf first */
	__u8 truncated; /* more frames existed beyond PYEBPF_MAX_FRAMES */
	__u8 status;	/* enum pyebpf_stack_status */
	__u32 pad;
	__u64 tstate; /* PyThreadState* walked */
	struct pyebpf_py_frame frames[PYEBPF_MAX_FRAMES];
};

/*
 * Value of the py_tstates map (python.bpf.h): the thread state the slow path
 * found for a thread, and when. User space creates the map once for every BPF
 * object (src/bpf/shared_maps.cpp) from these definitions. A cache, used only
 * for targets without a TSD slot: an evicted thread costs one more list walk.
 * The kernel preallocates every LRU entry before anything starts (65,536 took
 * ~17 ms).
 */
struct pyebpf_tstate_hint {
	__u64 tstate;
	__u64 ts_ns;
};
#define PYEBPF_TSTATE_ENTRIES 8192

/*
 * A counting filter in front of py_procs: count[tgid % PYEBPF_PROC_SLOTS] is
 * the number of py_procs entries whose tgid falls in that slot. Hooks that run
 * for every task on the host (offcpu's scheduler tracepoints) read the slot,
 * an array load, before the hash lookup: a task that is not a target costs no
 * hash. Every writer keeps it a superset: +1 before it creates an entry, -1
 * once it deleted one (pyebpf_add_proc / pyebpf_remove_proc in BPF,
 * SharedMaps in user space, which counts with atomics on the mmap'd map).
 */
#define PYEBPF_PROC_SLOTS 32768
struct pyebpf_proc_slots {
	__u32 count[PYEBPF_PROC_SLOTS];
};

PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_py_layout) == 40, "layout size");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_py_proc) == 72, "proc size");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_py_frame) == 16, "frame size");
PYEBPF_STATIC_ASSERT(sizeof(struct pyebpf_py_stack) == 16 + 16 * PYEBPF_MAX_FRAMES, "stack size");

/* Bytes of a stack record that carry data: what gets copied to the ring buffer. */
#define PYEBPF_STACK_BYTES(depth) (16 + 16 * (__u64)(depth))

/*
 * Tag of a code object, over the first code_tag_len bytes of its immutable
 * integer header (flags, arg counts, first line). BPF and user space compute it
 * over the same bytes, so user space can tell that a cached code address now
 * holds a different code object. A word at a time: BPF runs this once per frame
 * of every sample, and a byte loop was a fifth of a deep walk's cost. Each step
 * (xor, multiply by an odd number) is a bijection of the state and the final
 * mix spreads every bit into the 32 kept, so any single changed bit shows.
 */
static inline __u32 pyebpf_code_tag(const __u8 *bytes, __u32 len)
{
	__u64 hash = 0xcbf29ce484222325ULL, word;

	for (__u32 i = 0; i < PYEBPF_CODE_TAG_LEN; i += 8) {
		if (i >= len)
			break;
		__builtin_memcpy(&word, bytes + i, sizeof(word));
		if (len - i < 8)
			word &= (1ULL << (8 * (len - i))) - 1;
		hash = (hash ^ word) * 0x100000001b3ULL;
	}
	hash ^= hash >> 33; /* MurmurHash3's fmix64 */
	hash *= 0xff51afd7ed558ccdULL;
	hash ^= hash >> 33;
	hash *= 0xc4ceb33fe1a85ec3ULL;
	hash ^= hash >> 33;
	return (__u32)hash;
}

#endif /* PYEBPF_PYTHON_H */
