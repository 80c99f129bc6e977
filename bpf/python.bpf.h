/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * BPF-only CPython walker shared by every tracker that reports Python stacks:
 * find a thread's own PyThreadState, then walk its frame chain recording
 * (code object, instruction offset, code tag) per frame. Everything version
 * specific comes from struct pyebpf_py_proc (python.h), so a CPython version is
 * data in offsets/cpython.json, not a code path here.
 */
#ifndef PYEBPF_PYTHON_BPF_H
#define PYEBPF_PYTHON_BPF_H

#include "task.bpf.h"
#include "python.h"

/*
 * How the walker reads the target's memory, and which process it walks: the
 * current task's, in every tracker (its hooks run in the target's context).
 * A program that walks another task (thread_dump's sleepable task iterator)
 * defines both before including this file.
 */
#ifndef PYEBPF_READ_USER
#define PYEBPF_READ_USER(dst, size, src) bpf_probe_read_user(dst, size, src)
#define PYEBPF_WALKED_TGID()		 (bpf_get_current_pid_tgid() >> 32)
#endif

/* Target processes, filled by user space; shared by all BPF objects (map reuse). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PYEBPF_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct pyebpf_py_proc);
} py_procs SEC(".maps");

/* py_procs' counting filter (python.h), shared the same way. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct pyebpf_proc_slots);
} py_proc_slots SEC(".maps");

/*
 * Slow-path cache: host tid -> PyThreadState* found by walking the thread list,
 * for processes where the TSD slot could not be located at attach. A miss is
 * cached too (tstate 0) and retried after PYEBPF_TSTATE_RETRY_NS, so threads
 * without Python state do not cost a list walk per event.
 */
#define PYEBPF_TSTATE_RETRY_NS (500ULL * 1000 * 1000)

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PYEBPF_TSTATE_ENTRIES);
	__type(key, __u32);
	__type(value, struct pyebpf_tstate_hint);
} py_tstates SEC(".maps");

/* A code object already read (pyebpf_python_code). */
struct pyebpf_code_memo {
	__u64 code;
	__u64 epoch; /* the memo epoch it was read in (struct pyebpf_walk_scratch); never wraps */
	__u32 tag;
	__u32 pad;
};

/*
 * Map memory for the walk: reads land here so field offsets can be variable.
 * Which target addresses `block` holds lives here too, not on the stack: the
 * verifier does not track values stored in map memory, so every frame step
 * looks the same to it; tracked, the bounded loop's steps each differed
 * (a block starting at a page boundary or not) and it gave up.
 */
struct pyebpf_walk_scratch {
	__u8 block[PYEBPF_FRAME_BLOCK + PYEBPF_FRAME_WINDOW + 8];
	__u8 code[PYEBPF_CODE_WINDOW + PYEBPF_CODE_TAG_LEN];
	struct pyebpf_code_memo memo[PYEBPF_CODE_MEMO];
	__u64 block_start; /* block holds target memory [block_start, block_end) */
	__u64 block_end;
	/* memo entries of this epoch are valid; a walk starts a new one unless
	 * the last one's are still valid for it (pyebpf_memo_epoch) */
	__u64 memo_image;      /* tgid << 32 | pyebpf_py_proc.image of the epoch, 0 = its walk only */
	__u64 memo_generation; /* the main interpreter's count of freed code objects then */
	__u64 epoch;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pyebpf_walk_scratch);
} py_walk_scratch SEC(".maps");

static __always_inline __u32 *pyebpf_proc_slot(__u32 tgid)
{
	__u32 zero = 0;
	struct pyebpf_proc_slots *slots = bpf_map_lookup_elem(&py_proc_slots, &zero);

	return slots ? &slots->count[tgid & (PYEBPF_PROC_SLOTS - 1)] : NULL;
}

/* False when tgid is certainly not in py_procs: its filter slot is empty. */
static __always_inline bool pyebpf_maybe_proc(__u32 tgid)
{
	__u32 *slot = pyebpf_proc_slot(tgid);

	return !slot || *slot;
}

static __always_inline struct pyebpf_py_proc *pyebpf_lookup_proc(__u32 tgid)
{
	if (!pyebpf_maybe_proc(tgid))
		return NULL; /* the common case in a host-wide hook */
	return bpf_map_lookup_elem(&py_procs, &tgid);
}

/*
 * Creates or replaces tgid's entry, counted in its slot. A replaced entry
 * was counted when it was created, so the reservation is given back; one
 * deleted between the two updates makes the second fail and is created anew.
 */
static __always_inline void pyebpf_add_proc(__u32 tgid, const struct pyebpf_py_proc *proc)
{
	__u32 *slot = pyebpf_proc_slot(tgid);

	if (!slot)
		return;
	__sync_fetch_and_add(slot, 1);
	for (int i = 0; i < 2; i++) {
		if (!bpf_map_update_elem(&py_procs, &tgid, proc, BPF_NOEXIST))
			return;
		if (!bpf_map_update_elem(&py_procs, &tgid, proc, BPF_EXIST))
			break;
	}
	__sync_fetch_and_add(slot, -1); /* replaced a counted entry, or the map is full */
}

static __always_inline void pyebpf_remove_proc(__u32 tgid)
{
	__u32 *slot = pyebpf_proc_slot(tgid);

	if (!bpf_map_delete_elem(&py_procs, &tgid) && slot)
		__sync_fetch_and_add(slot, -1);
}

static __always_inline int pyebpf_read_ptr(__u64 addr, __u64 *out)
{
	*out = 0;
	return PYEBPF_READ_USER(out, sizeof(*out), (const void *)addr);
}

static __always_inline __u64 pyebpf_window_u64(const __u8 *window, __u16 off)
{
	__u64 value;

	__builtin_memcpy(&value, window + (off & (PYEBPF_FRAME_WINDOW - 1)), sizeof(value));
	return value;
}

static __always_inline __s32 pyebpf_window_s32(const __u8 *window, __u16 off)
{
	__s32 value;

	__builtin_memcpy(&value, window + (off & (PYEBPF_FRAME_WINDOW - 1)), sizeof(value));
	return value;
}

/* A candidate thread state belongs to the thread whose thread pointer is `tp`. */
static __always_inline bool pyebpf_tstate_is_thread(const struct pyebpf_py_proc *proc, __u64 tstate, __u64 tp)
{
	__u64 thread_id;

	if (!tstate || pyebpf_read_ptr(tstate + proc->layout.tstate_thread_id, &thread_id))
		return false;
	return thread_id == tp;
}

/*
 * Chosen by user space before load: bpf_loop (Linux 5.17+) verifies the frame
 * step and the thread-list step once instead of once per iteration, which
 * keeps load time low when several programs inline the walkers; older
 * kernels get bounded loops.
 */
const volatile bool targ_use_bpf_loop = true;

struct pyebpf_thread_walk_ctx {
	const struct pyebpf_py_layout *l;
	__u64 tp;
	__u64 tstate; /* the entry to look at next */
	__u64 found;
};

static int pyebpf_thread_walk_step(__u32 index, struct pyebpf_thread_walk_ctx *ctx)
{
	__u64 thread_id;

	if (!ctx->tstate || pyebpf_read_ptr(ctx->tstate + ctx->l->tstate_thread_id, &thread_id))
		return 1;
	if (thread_id == ctx->tp) {
		ctx->found = ctx->tstate;
		return 1;
	}
	return pyebpf_read_ptr(ctx->tstate + ctx->l->tstate_next, &ctx->tstate) ? 1 : 0;
}

/*
 * Slow path: walk interp->threads for the entry whose thread_id is `tp`. New
 * threads go to the head of the list, so in a service of many threads the
 * oldest (often its workers) are the farthest: with bpf_loop the walk goes up
 * to PYEBPF_MAX_THREAD_LOOP entries, once per thread (the caller caches it).
 */
static __always_inline __u64 pyebpf_walk_thread_list(const struct pyebpf_py_proc *proc, __u64 tp)
{
	struct pyebpf_thread_walk_ctx ctx = {.l = &proc->layout, .tp = tp};
	const struct pyebpf_py_layout *l = &proc->layout;
	__u64 interp;

	if (pyebpf_read_ptr(proc->runtime + l->runtime_interp_head, &interp) || !interp)
		return 0;
	if (pyebpf_read_ptr(interp + l->interp_threads_head, &ctx.tstate))
		return 0;
	if (targ_use_bpf_loop) {
		bpf_loop(PYEBPF_MAX_THREAD_LOOP, pyebpf_thread_walk_step, &ctx, 0);
		return ctx.found;
	}
#pragma clang loop unroll(disable)
	for (int i = 0; i < PYEBPF_MAX_THREAD_WALK; i++)
		if (pyebpf_thread_walk_step(i, &ctx))
			break;
	return ctx.found;
}

/*
 * The PyThreadState bound to thread `tid` (thread pointer `tp`) of the process
 * `proc` describes, whether or not it holds the GIL, including threads started
 * after attach.
 *
 * Fast path: CPython keeps each thread's state where the thread finds it
 * whether or not it holds the GIL (the "gilstate"): a pthread TSD slot
 * (autoTSSkey, <= 3.14) or the thread-local _Py_tss_gilstate (3.15+), both at
 * a fixed offset from the thread pointer (above it, or below it for static
 * TLS), which user space located at attach. The candidate is validated
 * (thread_id == thread pointer).
 * Slow path, only where no slot was found: the thread list, cached per tid.
 */
static __always_inline __u64 pyebpf_find_tstate(const struct pyebpf_py_proc *proc, __u64 tp, __u32 tid)
{
	__u64 tstate = 0, now;
	struct pyebpf_tstate_hint *hint, fresh = {};

	if (!tp)
		return 0;
	if (proc->tss_slot != PYEBPF_NO_TSS_SLOT) {
		if (pyebpf_read_ptr(tp + (__s64)proc->tss_slot, &tstate))
			return 0;
		return pyebpf_tstate_is_thread(proc, tstate, tp) ? tstate : 0;
	}

	now = bpf_ktime_get_ns();
	hint = bpf_map_lookup_elem(&py_tstates, &tid);
	if (hint) {
		if (hint->tstate && pyebpf_tstate_is_thread(proc, hint->tstate, tp))
			return hint->tstate;
		if (!hint->tstate && now - hint->ts_ns < PYEBPF_TSTATE_RETRY_NS)
			return 0;
	}
	pyebpf_count(PYEBPF_CNT_TSTATE_WALK);
	fresh.tstate = pyebpf_walk_thread_list(proc, tp);
	fresh.ts_ns = now;
	bpf_map_update_elem(&py_tstates, &tid, &fresh, BPF_ANY);
	return fresh.tstate;
}

/* Byte offset of the instruction a frame executes, from its frame window. */
static __always_inline __s32 pyebpf_frame_instr(const struct pyebpf_py_layout *l, const __u8 *window, __u64 code)
{
	__s64 offset;

	switch (l->instr_kind) {
	case PYEBPF_INSTR_LASTI_BYTES:
		return pyebpf_window_s32(window, l->frame_instr);
	case PYEBPF_INSTR_LASTI_UNITS:
		return pyebpf_window_s32(window, l->frame_instr) * 2;
	default:
		offset = (__s64)(pyebpf_window_u64(window, l->frame_instr) - (code + l->code_adaptive));
		if (offset < -(1LL << 30) || offset > (1LL << 30))
			return -1;
		return (__s32)offset;
	}
}

struct pyebpf_walk_ctx {
	const struct pyebpf_py_proc *proc;
	struct pyebpf_py_stack *st;
	__u64 *frames; /* where kept frame i's address goes, or NULL: pyebpf_walk_stack_at() */
	struct pyebpf_walk_scratch *scratch;
	__u64 frame;
	__u64 mark;  /* a frame visited earlier: seeing it again means a loop */
	__u64 epoch; /* of scratch->memo entries valid for this walk */
	bool fault;
	bool loop;
};

/*
 * The fields of the frame at `frame`, in scratch->block; NULL if unreadable.
 * One bpf_probe_read_user costs more than copying a few KiB, and a 50-deep
 * walk made one per frame: where callers' frames lie below their callee's
 * (3.11+), one read takes the memory below the frame too, down to the start
 * of its page (mapped, as the frame is; the page below may not be), and the
 * frames of the callers found there cost no read.
 */
static __always_inline const __u8 *pyebpf_frame_fields(struct pyebpf_walk_ctx *ctx, __u64 frame)
{
	const struct pyebpf_py_layout *l = &ctx->proc->layout;
	struct pyebpf_walk_scratch *scratch = ctx->scratch;
	__u64 end = frame + l->frame_window, start = frame, page = frame & ~(PYEBPF_PAGE_SIZE - 1), size;

	if (frame < scratch->block_start || end > scratch->block_end) {
		if (l->frames_stacked)
			start = end - PYEBPF_FRAME_BLOCK < page ? page : end - PYEBPF_FRAME_BLOCK;
		size = end - start;
		if (size > PYEBPF_FRAME_BLOCK || PYEBPF_READ_USER(scratch->block, size, (const void *)start))
			return NULL;
		scratch->block_start = start;
		scratch->block_end = end;
	}
	return scratch->block + ((frame - scratch->block_start) & (PYEBPF_FRAME_BLOCK - 1));
}

/*
 * A frame's code object: its type (is it a PyCodeObject?) and its tag, in one
 * read from ob_type through the immutable header, which user space checked
 * lie within PYEBPF_CODE_WINDOW bytes. If that span cannot be read, the type
 * alone, and tag 0 (nothing to compare). Returns 0 when the type was read.
 */
static __always_inline int pyebpf_read_code(const struct pyebpf_py_layout *l, __u64 code, __u8 *window, __u64 *type,
					    __u32 *tag)
{
	__u32 span = (__u32)(l->code_tag + l->code_tag_len - l->object_type) & (PYEBPF_CODE_WINDOW - 1);
	__u32 tag_at = (__u32)(l->code_tag - l->object_type) & (PYEBPF_CODE_WINDOW - 1);

	*tag = 0;
	if (PYEBPF_READ_USER(window, span, (const void *)(code + l->object_type)))
		return pyebpf_read_ptr(code + l->object_type, type);
	__builtin_memcpy(type, window, sizeof(*type));
	*tag = pyebpf_code_tag(window + tag_at, l->code_tag_len);
	return 0;
}

/*
 * Whether `code` is a PyCodeObject, and its tag, remembered per CPU: a read
 * of target memory costs ~100-200 ns here, and a deep stack has a code object
 * per frame. Valid are the entries of the walk's epoch (pyebpf_memo_epoch).
 */
static __always_inline bool pyebpf_python_code(struct pyebpf_walk_ctx *ctx, __u64 code, __u32 *tag)
{
	/* Fibonacci hashing: code objects of one module lie a fixed stride
	 * apart, which a few address bits alone would fold onto few slots. */
	__u32 slot = ((code * 0x9e3779b97f4a7c15ULL) >> 56) & (PYEBPF_CODE_MEMO - 1);
	struct pyebpf_code_memo *memo = &ctx->scratch->memo[slot];
	__u64 type = 0;

	if (memo->code == code && memo->epoch == ctx->epoch) {
		*tag = memo->tag;
		return true;
	}
	if (pyebpf_read_code(&ctx->proc->layout, code, ctx->scratch->code, &type, tag) || type != ctx->proc->code_type)
		return false;
	memo->code = code;
	memo->tag = *tag;
	memo->epoch = ctx->epoch;
	return true;
}

/*
 * The memo epoch of a walk whose code objects are known not to have been
 * freed since the count `generation` was read in the process image `image`
 * (0 = unknown), read before any code object of the walk.
 *
 * Within one walk, entries are always valid: a frame on the walked stack
 * holds a reference to its code, so the object cannot be freed and its
 * address reused meanwhile (recursion and alternating calls meet the same
 * code objects again). So a walk without a count starts a new epoch.
 *
 * Across walks, where the target counts the code objects it frees (3.14+:
 * code_dealloc bumps interp->_code_object_generation, which CPython publishes
 * in _Py_DebugOffsets for profilers' caches) and the thread runs in the main
 * interpreter: if the count has not moved since the epoch began, no code
 * object was freed, so the object at a remembered address is still the one
 * read then (another can only take a freed one's address). A free during a
 * walk shows in the next one's count. The process image is part of the key:
 * an exec'd successor under the same pid counts afresh.
 */
static __always_inline __u64 pyebpf_memo_epoch(struct pyebpf_walk_scratch *scratch, __u64 image, __u64 generation)
{
	if (image && image == scratch->memo_image && generation == scratch->memo_generation)
		return scratch->epoch;
	scratch->memo_image = image;
	scratch->memo_generation = generation;
	scratch->epoch++;
	return scratch->epoch;
}

/*
 * The thread's current frame into ctx->frame, and the walk's memo epoch.
 * Where code objects can be remembered across walks, the thread's
 * interpreter comes in the same read as its frame pointer (user space
 * checked tstate_interp < tstate_frame, and the span), then that one's count
 * of freed code objects.
 */
static __always_inline int pyebpf_walk_begin(struct pyebpf_walk_ctx *ctx, __u64 tstate)
{
	const struct pyebpf_py_proc *proc = ctx->proc;
	const struct pyebpf_py_layout *l = &proc->layout;
	__u8 *window = ctx->scratch->code;
	__u64 interp, image = 0, generation = 0;
	__u32 frame_at;

	if (!proc->main_interp) { /* user space set it only where the count's offset is known */
		ctx->epoch = pyebpf_memo_epoch(ctx->scratch, 0, 0);
		return pyebpf_read_ptr(tstate + l->tstate_frame, &ctx->frame);
	}
	frame_at = (__u32)(l->tstate_frame - l->tstate_interp) & (PYEBPF_TSTATE_WINDOW - 1);
	if (PYEBPF_READ_USER(window, frame_at + 8, (const void *)(tstate + l->tstate_interp)))
		return -1;
	__builtin_memcpy(&interp, window, sizeof(interp));
	__builtin_memcpy(&ctx->frame, window + frame_at, sizeof(ctx->frame));
	if (interp == proc->main_interp && !pyebpf_read_ptr(interp + l->interp_code_generation, &generation))
		image = ((__u64)PYEBPF_WALKED_TGID() << 32) | proc->image;
	ctx->epoch = pyebpf_memo_epoch(ctx->scratch, image, generation);
	return 0;
}

/* One frame of the walk; returns 1 to stop. */
static int pyebpf_walk_step(__u32 index, struct pyebpf_walk_ctx *ctx)
{
	const struct pyebpf_py_layout *l = &ctx->proc->layout;
	struct pyebpf_py_stack *st = ctx->st;
	struct pyebpf_py_frame *slot;
	__u64 frame = ctx->frame, code;
	const __u8 *fields;
	__u32 tag = 0;
	__u8 owner;

	if (!frame)
		return 1;
	/* A target can corrupt its own frame chain (a buggy C extension): a
	 * loop would fill the stack with the same frames, so look for one
	 * (Brent: remember the frame at visits 0, 1, 2, 4, 8, ...; a loop of
	 * length n comes back to it within the next mark's span). */
	if (frame == ctx->mark) {
		ctx->loop = true;
		return 1;
	}
	if (!(index & (index - 1)))
		ctx->mark = frame;
	fields = pyebpf_frame_fields(ctx, frame);
	if (!fields) {
		ctx->fault = true;
		return 1;
	}
	/* 3.14+ keep f_executable as a _PyStackRef: an object pointer with tag
	 * bits in its low bits (Py_TAG_BITS, Include/internal/pycore_stackref.h). Objects are
	 * at least 8-byte aligned, so clearing the low 3 bits is exact for
	 * every version, tagged or not. */
	code = pyebpf_window_u64(fields, l->frame_code) & ~7ULL;
	owner = l->frame_owner == PYEBPF_NO_OFFSET ? 0 : fields[l->frame_owner & (PYEBPF_FRAME_WINDOW - 1)];
	if (code && owner < l->owner_cstack && pyebpf_python_code(ctx, code, &tag)) {
		if (st->depth >= PYEBPF_MAX_FRAMES) {
			st->truncated = 1;
			pyebpf_count(PYEBPF_CNT_TRUNCATED);
			return 1;
		}
		slot = &st->frames[st->depth & (PYEBPF_MAX_FRAMES - 1)];
		if (ctx->frames)
			ctx->frames[st->depth & (PYEBPF_MAX_FRAMES - 1)] = frame;
		slot->code = code;
		slot->instr = pyebpf_frame_instr(l, fields, code);
		slot->tag = tag;
		st->depth++;
	} else {
		pyebpf_count(PYEBPF_CNT_FRAMES_SKIPPED);
	}
	ctx->frame = pyebpf_window_u64(fields, l->frame_back);
	return 0;
}

/*
 * Walks the frame chain of `tstate` into `st` (leaf first), and the address
 * of each frame kept into `frames` (PYEBPF_MAX_FRAMES of them) unless NULL
 * (thread_dump: the frames' locals name the lock a thread waits on). Bounded: at most
 * PYEBPF_MAX_FRAME_VISITS frames are visited and PYEBPF_MAX_FRAMES kept. Frames
 * whose code is not a PyCodeObject (3.12+ shim frames, 3.13 f_executable None)
 * are skipped. st->depth lives in map memory on purpose: the verifier then
 * treats it as one unknown bounded value instead of tracking every possible
 * depth per iteration.
 */
static __always_inline void pyebpf_walk_stack_at(const struct pyebpf_py_proc *proc, __u64 tstate,
						 struct pyebpf_py_stack *st, __u64 *frames)
{
	const struct pyebpf_py_layout *l = &proc->layout;
	struct pyebpf_walk_ctx ctx = {.proc = proc, .st = st, .frames = frames};
	__u32 zero = 0;

	st->depth = 0;
	st->truncated = 0;
	st->status = PYEBPF_STACK_OK;
	st->tstate = tstate;
	if (!tstate) {
		st->status = PYEBPF_STACK_NO_TSTATE;
		return;
	}
	ctx.scratch = bpf_map_lookup_elem(&py_walk_scratch, &zero);
	if (!ctx.scratch)
		return;
	ctx.scratch->block_start = ctx.scratch->block_end = 0;
	if (pyebpf_walk_begin(&ctx, tstate) || (l->cframe_current_frame != PYEBPF_NO_OFFSET && ctx.frame &&
						pyebpf_read_ptr(ctx.frame + l->cframe_current_frame, &ctx.frame))) {
		ctx.fault = true;
	} else if (targ_use_bpf_loop) {
		bpf_loop(PYEBPF_MAX_FRAME_VISITS, pyebpf_walk_step, &ctx, 0);
	} else {
#pragma clang loop unroll(disable)
		for (__u32 i = 0; i < PYEBPF_MAX_FRAME_VISITS; i++) {
			if (pyebpf_walk_step(i, &ctx))
				break;
		}
	}
	if (ctx.fault) {
		st->status = PYEBPF_STACK_READ_FAULT;
		pyebpf_count(PYEBPF_CNT_READ_FAULT);
	} else if (ctx.loop) {
		st->status = PYEBPF_STACK_FRAME_LOOP;
		pyebpf_count(PYEBPF_CNT_FRAME_LOOP);
	}
}

/*
 * The same, where the frames' own addresses are not wanted (every tracker).
 * A global function: the verifier checks it once per object, not once per
 * call site. gil calls it from ten places; inlined, its programs took ~300 ms
 * of the kernel's verifier at each start, the longest part of pyebpf's.
 * The arguments of a global function may be NULL to the verifier.
 */
__noinline int pyebpf_walk_stack(const struct pyebpf_py_proc *proc, __u64 tstate, struct pyebpf_py_stack *st)
{
	if (proc && st)
		pyebpf_walk_stack_at(proc, tstate, st, NULL);
	return 0;
}

#endif /* PYEBPF_PYTHON_BPF_H */
