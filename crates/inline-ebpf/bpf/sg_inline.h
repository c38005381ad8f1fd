/* Types shared with crates/inline-common (Rust). Keep both in step: each side
 * asserts the same sizes and offsets at compile time. */
#ifndef SG_INLINE_H
#define SG_INLINE_H

#include <linux/types.h>
#include <stddef.h>

#define SG_MODE_DELAY 1
#define SG_MODE_LOSS 2
#define SG_MODE_PDM 4
/* With SG_MODE_DELAY: the 8-byte compact delay header (NTP bits 8-39). */
#define SG_MODE_COMPACT 8
#define SG_COMPACT_SHIFT 8

/* sg_config.sampling */
#define SG_SAMPLING_CPU 1
/* sg_record.kind: dst_ts is CLOCK_MONOTONIC ns (the agent converts it). */
#define SG_KIND_MONO_DST 0x80
/* Records per ring-buffer sample (RECORD_BATCH in inline-common). */
#define SG_BATCH 16

#define SG_PDM_TYPE 0x0F
#define SG_NEXTHDR_DEST 60
#define SG_ETH_HLEN 14
#define SG_IP6_HLEN 40
/* Verdict for every packet we let through: TC_ACT_UNSPEC, which tcx calls
 * TCX_NEXT, so that programs attached after ours (tcx links or clsact
 * filters of other tools) still see the packet; with nothing after it the
 * packet passes. TC_ACT_OK would end the hook's chain at our program. */
#define SG_PASS (-1)
/* Offset of the extension header we insert / remove. */
#define SG_EH_OFF (SG_ETH_HLEN + SG_IP6_HLEN)

/* NTP era 0 starts 70 years (17 leap years) before the Unix epoch. */
#define SG_NTP_UNIX_OFFSET 2208988800ULL

struct sg_config {
	__u8 src_net[16];
	__u8 src_mask[16];
	__u8 dst_net[16];
	__u8 dst_mask[16];
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 enabled;
	__u8 mode;
	__u8 delay_type;
	__u8 loss_type;
	__u8 sampling;
	/* 1 only as the loader wrote it: the program's read-only copy
	 * (sg_loaded in sg_source.c) holds the same values. */
	__u8 loaded;
	__u8 _pad;
	__u32 sample_n;
	__u64 min_interval_ns;
	__u64 flow_timeout_ns;
};

struct sg_flow_key {
	__u8 src[16];
	__u8 dst[16];
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 _pad[3];
};

struct sg_flow_state {
	__u64 pkts;
	__u32 seq;
	__u32 _pad;
	__u64 last_mark_ns;
	__u64 last_seen_ns;
};

struct sg_record {
	struct sg_flow_key flow;
	__u32 seq;
	__u8 kind;
	__u8 _pad[3];
	__u64 src_ts;
	__u64 dst_ts;
};

_Static_assert(sizeof(struct sg_config) == 96, "sg_config size");
_Static_assert(offsetof(struct sg_config, sport) == 64, "sg_config.sport");
_Static_assert(offsetof(struct sg_config, proto) == 68, "sg_config.proto");
_Static_assert(offsetof(struct sg_config, sampling) == 73, "sg_config.sampling");
_Static_assert(offsetof(struct sg_config, loaded) == 74, "sg_config.loaded");
_Static_assert(offsetof(struct sg_config, sample_n) == 76, "sg_config.sample_n");
_Static_assert(offsetof(struct sg_config, min_interval_ns) == 80, "sg_config.min_interval_ns");
_Static_assert(offsetof(struct sg_config, flow_timeout_ns) == 88, "sg_config.flow_timeout_ns");
_Static_assert(sizeof(struct sg_flow_key) == 40, "sg_flow_key size");
_Static_assert(offsetof(struct sg_flow_key, proto) == 36, "sg_flow_key.proto");
_Static_assert(sizeof(struct sg_flow_state) == 32, "sg_flow_state size");
_Static_assert(offsetof(struct sg_flow_state, last_mark_ns) == 16, "sg_flow_state.last_mark_ns");
_Static_assert(sizeof(struct sg_record) == 64, "sg_record size");
_Static_assert(offsetof(struct sg_record, seq) == 40, "sg_record.seq");
_Static_assert(offsetof(struct sg_record, kind) == 44, "sg_record.kind");
_Static_assert(offsetof(struct sg_record, src_ts) == 48, "sg_record.src_ts");
_Static_assert(offsetof(struct sg_record, dst_ts) == 56, "sg_record.dst_ts");

/* Counter indices (crates/inline-common/src/counters.rs). */
enum {
	SG_C_SRC_MATCHED = 0,
	SG_C_SRC_INSTRUMENTED = 1,
	SG_C_SRC_SAMPLED_OUT = 2,
	SG_C_SRC_INTERVAL = 3,
	SG_C_SRC_MTU = 4,
	SG_C_SRC_EXTHDR = 5,
	SG_C_SRC_FRAGMENT = 6,
	SG_C_SRC_JUMBO = 7,
	SG_C_SRC_UDP_GSO = 8,
	SG_C_SRC_ERROR = 9,
	SG_C_SINK_MARKED = 10,
	SG_C_SINK_RECORDS = 11,
	SG_C_SINK_RING_DROPS = 12,
	SG_C_SINK_FOREIGN = 13,
	SG_C_SINK_ERROR = 14,
	SG_COUNTERS = 16,
};

/* Bytes the source inserts for `mode` (header_len in inline-common). */
static inline __attribute__((always_inline)) __u32 sg_hlen(__u8 mode)
{
	if (mode & SG_MODE_PDM)
		return 16;
	if (mode & SG_MODE_COMPACT)
		return 8;
	if ((mode & 3) == 3)
		return 32;
	if (mode & SG_MODE_DELAY)
		return 24;
	if (mode & SG_MODE_LOSS)
		return 8;
	return 0;
}

#endif
