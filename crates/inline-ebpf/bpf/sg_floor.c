// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Calibration programs for `streamgauge inline bench` (never used to
 * measure): they bound from below what any tc program can cost here.
 *
 * - sg_empty: returns at once (the hook's own cost, and the overhead of the
 *   kernel's run-time statistics).
 * - sg_floor_push / sg_floor_pop (and sg_floor_pop_xdp, sg_empty_xdp for
 *   a sink at XDP): insert an 8-byte Destination Options
 *   header (our loss layout, sequence 0) on egress and remove it on ingress,
 *   with the same helpers as sg_source/sg_sink but no filter, flow table,
 *   clock or ring buffer: the cost of carrying a header at all.
 * - sg_mfloor_push / sg_mfloor_pop (and sg_mfloor_pop_xdp): the
 *   "measurement floor" of one layout (sg_mfloor_mode, set at load to the
 *   measured mode): a header of the layout's length (8 to 32 bytes, so a
 *   longer one costs the head reallocation the real one costs) plus the
 *   kernel work an exact measurement with that layout cannot avoid, and
 *   none of our logic (no filter, configuration, counters, sampling, flow
 *   expiry, timer, or parsing of other layouts). Source: where the layout
 *   carries a sequence number (loss, PDM), one lookup of the flow's 8-byte
 *   key (the same five-tuple hash as sg_source) in an LRU hash map, an
 *   insert if missing, and an atomic increment of the flow's sequence
 *   number, written into the header; where it carries a timestamp, one
 *   read of the clock sg_source reads. Sink: the arrival time (the clock
 *   sg_sink reads for this layout: the precise one for a delay, else the
 *   coarse one), a record of struct sg_record's
 *   size and contents in a per-CPU batch, and one bpf_ringbuf_output per
 *   SG_BATCH records, waking the reader once per SG_WAKE_BATCHES batches
 *   as sg_sink does. The ring is drained by the same reader as the real
 *   sink's (crates/inline/src/calibration.rs); a failed output is counted
 *   in sg_mfloor_drops so that a full ring, which would make the
 *   phase cheaper, shows. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "sg_inline.h"
#include "sg_xdp.h"
#include "sg_flow.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define SG_FLOOR_TYPE 0x3e

SEC("tc")
int sg_empty(struct __sk_buff *skb)
{
	return SG_PASS;
}

SEC("tc")
int sg_floor_push(struct __sk_buff *skb)
{
	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return SG_PASS;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF > data_end)
		return SG_PASS;
	struct ipv6hdr *ip6 = data + SG_ETH_HLEN;
	__u8 nh = ip6->nexthdr;
	__u16 plen = bpf_ntohs(ip6->payload_len);
	if ((nh != 17 && nh != 6) || plen == 0 || bpf_skb_adjust_room(skb, 8, BPF_ADJ_ROOM_NET, 0))
		return SG_PASS;
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF + 8 > data_end)
		return TC_ACT_SHOT;
	ip6 = data + SG_ETH_HLEN;
	ip6->payload_len = bpf_htons(plen + 8);
	ip6->nexthdr = SG_NEXTHDR_DEST;
	__u8 *eh = data + SG_EH_OFF;
	eh[0] = nh;
	eh[1] = 0;
	eh[2] = SG_FLOOR_TYPE;
	eh[3] = 4;
	eh[4] = eh[5] = eh[6] = eh[7] = 0;
	return SG_PASS;
}

SEC("tc")
int sg_floor_pop(struct __sk_buff *skb)
{
	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return SG_PASS;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF + 8 > data_end)
		return SG_PASS;
	struct ipv6hdr *ip6 = data + SG_ETH_HLEN;
	__u8 *eh = data + SG_EH_OFF;
	if (ip6->nexthdr != SG_NEXTHDR_DEST || eh[1] != 0 || eh[2] != SG_FLOOR_TYPE)
		return SG_PASS;
	struct {
		__be16 plen;
		__u8 nexthdr;
	} __attribute__((packed)) fix = { bpf_htons(bpf_ntohs(ip6->payload_len) - 8), eh[0] };
	if (!bpf_skb_store_bytes(skb, SG_ETH_HLEN + 4, &fix, 3, BPF_F_RECOMPUTE_CSUM))
		bpf_skb_adjust_room(skb, -8, BPF_ADJ_ROOM_NET, 0);
	return SG_PASS;
}

/* XDP counterparts for a sink attached at XDP: the hook alone, and the
 * removal alone (the same 54-byte slide as sg_sink_xdp). */
SEC("xdp.frags")
int sg_empty_xdp(struct xdp_md *ctx)
{
	return XDP_PASS;
}

SEC("xdp.frags")
int sg_floor_pop_xdp(struct xdp_md *ctx)
{
	__u8 *eh = sg_xdp_dest_opts(ctx);
	if (!eh || eh[1] != 0 || eh[2] != SG_FLOOR_TYPE)
		return XDP_PASS;
	return sg_xdp_strip(ctx, 8, eh[0]) == -2 ? XDP_DROP : XDP_PASS;
}

/* ---- Measurement floor ---- */

/* As in sg_sink.c. */
#define SG_WAKE_BATCHES 64

struct sg_mfloor_seq {
	__u32 seq;
	__u32 _pad;
};

/* Per-flow sequence numbers, keyed as sg_source's sg_flows. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1000);
	__type(key, __u64);
	__type(value, struct sg_mfloor_seq);
} sg_mfloor_flows SEC(".maps");

/* Records to the reader; the loader sets max_entries as the agent does. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} sg_mfloor_records SEC(".maps");

struct sg_mfloor_batch {
	__u32 n;
	__u32 _pad;
	__u64 batches;
	struct sg_record recs[SG_BATCH];
};

/* This CPU's pending records (no timer: a partial batch waits for the
 * next packets, which is all a calibration phase needs). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sg_mfloor_batch);
} sg_mfloor_batches SEC(".maps");

/* Records whose bpf_ringbuf_output failed (ring full); touched only then. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sg_mfloor_drops SEC(".maps");

/* The layout the measurement floor carries, set by the loader before the
 * load (crates/inline/src/calibration.rs) to the measured --mode: its
 * bits are SG_MODE_*. The verifier knows the value and keeps only the
 * branches it selects, as if each layout had a program of its own. */
const volatile __u8 sg_mfloor_mode = SG_MODE_LOSS;

/* What the floor's layout carries: a sequence number (loss, PDM), a
 * timestamp (delay), and its length (sg_hlen: 8 to 32 bytes). */
static __always_inline int sg_mfloor_seq(void)
{
	return (sg_mfloor_mode & (SG_MODE_LOSS | SG_MODE_PDM)) != 0;
}

static __always_inline int sg_mfloor_ts(void)
{
	return (sg_mfloor_mode & SG_MODE_DELAY) != 0;
}

SEC("tc")
int sg_mfloor_push(struct __sk_buff *skb)
{
	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return SG_PASS;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF + 4 > data_end)
		return SG_PASS;
	struct ipv6hdr *ip6 = data + SG_ETH_HLEN;
	__u8 nh = ip6->nexthdr;
	__u16 plen = bpf_ntohs(ip6->payload_len);
	if ((nh != 17 && nh != 6) || plen == 0)
		return SG_PASS;
	const __u32 hlen = sg_hlen(sg_mfloor_mode);
	if (hlen < 8 || hlen > 32)
		return SG_PASS;
	struct sg_mfloor_seq *st = NULL;
	if (sg_mfloor_seq()) {
		const __u32 *ports = data + SG_EH_OFF;
		__u64 key = sg_flow_hash((const __u32 *)&ip6->saddr, (const __u32 *)&ip6->daddr,
					 bpf_ntohl(*ports), nh);
		st = bpf_map_lookup_elem(&sg_mfloor_flows, &key);
		if (!st) {
			struct sg_mfloor_seq fresh = {};
			bpf_map_update_elem(&sg_mfloor_flows, &key, &fresh, BPF_NOEXIST);
			st = bpf_map_lookup_elem(&sg_mfloor_flows, &key);
			if (!st)
				return SG_PASS;
		}
	}
	__u64 ts = sg_mfloor_ts() ? bpf_ktime_get_ns() : 0;
	if (bpf_skb_adjust_room(skb, hlen, BPF_ADJ_ROOM_NET, 0))
		return SG_PASS;
	__u32 seq = st ? bpf_htonl(__sync_fetch_and_add(&st->seq, 1)) : 0;
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF + hlen > data_end || data + SG_EH_OFF + 8 > data_end)
		return TC_ACT_SHOT;
	ip6 = data + SG_ETH_HLEN;
	ip6->payload_len = bpf_htons(plen + hlen);
	ip6->nexthdr = SG_NEXTHDR_DEST;
	/* One option filling the header: the sequence number (or, in an
	 * 8-byte delay layout, the timestamp's middle 32 bits) at +4, the
	 * 64-bit timestamp at +8 where there is room, zeros after it. */
	__u8 *eh = data + SG_EH_OFF;
	eh[0] = nh;
	eh[1] = hlen / 8 - 1;
	eh[2] = SG_FLOOR_TYPE;
	eh[3] = hlen - 4;
	if (hlen == 8 && sg_mfloor_ts()) {
		__u32 t = bpf_htonl((__u32)(ts >> SG_COMPACT_SHIFT));
		__builtin_memcpy(eh + 4, &t, 4);
	} else {
		__builtin_memcpy(eh + 4, &seq, 4);
	}
	if (hlen >= 16 && (void *)eh + 16 <= data_end) {
		__u64 t = bpf_cpu_to_be64(ts);
		__builtin_memcpy(eh + 8, &t, 8);
	}
	if (hlen >= 24 && (void *)eh + 24 <= data_end)
		*(__u64 *)(eh + 16) = 0;
	if (hlen == 32 && (void *)eh + 32 <= data_end)
		*(__u64 *)(eh + 24) = 0;
	return SG_PASS;
}

/* Whether `eh` (8 bytes readable) is the floor's header for its layout. */
static __always_inline int sg_mfloor_is_ours(const __u8 *eh)
{
	return eh[1] == sg_hlen(sg_mfloor_mode) / 8 - 1 && eh[2] == SG_FLOOR_TYPE;
}

/* Record the packet whose floor header `eh` (8 bytes readable, with the
 * IPv6 header in front of it) the sink is about to remove. */
static __always_inline void sg_mfloor_record(const __u8 *eh, const void *data_end)
{
	const __u32 hlen = sg_hlen(sg_mfloor_mode);
	/* The clock sg_sink reads for this layout: the precise one only where
	 * a delay is computed from it. */
	__u64 now = sg_mfloor_ts() ? bpf_ktime_get_ns() : bpf_ktime_get_coarse_ns();
	__u32 zero = 0;
	struct sg_mfloor_batch *b = bpf_map_lookup_elem(&sg_mfloor_batches, &zero);
	if (!b)
		return;
	__u32 n = b->n;
	if (n >= SG_BATCH)
		n = 0;
	const struct ipv6hdr *ip6 = (const void *)eh - SG_IP6_HLEN;
	struct sg_record *r = &b->recs[n];
	__builtin_memcpy(r->flow.src, &ip6->saddr, 16);
	__builtin_memcpy(r->flow.dst, &ip6->daddr, 16);
	r->flow.sport = 0;
	r->flow.dport = 0;
	r->flow.proto = eh[0];
	r->flow._pad[0] = r->flow._pad[1] = r->flow._pad[2] = 0;
	const __u16 *ports = (const void *)eh + (hlen & 63);
	if ((void *)(ports + 2) <= data_end) {
		r->flow.sport = bpf_ntohs(ports[0]);
		r->flow.dport = bpf_ntohs(ports[1]);
	}
	__u32 word;
	__builtin_memcpy(&word, eh + 4, 4);
	r->seq = sg_mfloor_seq() ? bpf_ntohl(word) : 0;
	r->kind = sg_mfloor_mode | SG_KIND_MONO_DST;
	r->_pad[0] = r->_pad[1] = r->_pad[2] = 0;
	__u64 src_ts = 0;
	if (sg_mfloor_ts()) {
		if (hlen == 8) {
			src_ts = (__u64)bpf_ntohl(word) << SG_COMPACT_SHIFT;
		} else if ((void *)eh + 16 <= data_end) {
			__builtin_memcpy(&src_ts, eh + 8, 8);
			src_ts = bpf_be64_to_cpu(src_ts);
		}
	}
	r->src_ts = src_ts;
	r->dst_ts = now;
	if (n + 1 < SG_BATCH) {
		b->n = n + 1;
		return;
	}
	b->n = 0;
	b->batches += 1;
	__u64 flags = b->batches % SG_WAKE_BATCHES == 0 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&sg_mfloor_records, b->recs, sizeof(b->recs), flags)) {
		__u64 *drops = bpf_map_lookup_elem(&sg_mfloor_drops, &zero);
		if (drops)
			__sync_fetch_and_add(drops, SG_BATCH);
	}
}

SEC("tc")
int sg_mfloor_pop(struct __sk_buff *skb)
{
	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return SG_PASS;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF + 8 > data_end)
		return SG_PASS;
	struct ipv6hdr *ip6 = data + SG_ETH_HLEN;
	__u8 *eh = data + SG_EH_OFF;
	if (ip6->nexthdr != SG_NEXTHDR_DEST || !sg_mfloor_is_ours(eh))
		return SG_PASS;
	const __u32 hlen = sg_hlen(sg_mfloor_mode);
	sg_mfloor_record(eh, data_end);
	struct {
		__be16 plen;
		__u8 nexthdr;
	} __attribute__((packed)) fix = { bpf_htons(bpf_ntohs(ip6->payload_len) - hlen), eh[0] };
	if (!bpf_skb_store_bytes(skb, SG_ETH_HLEN + 4, &fix, 3, BPF_F_RECOMPUTE_CSUM))
		bpf_skb_adjust_room(skb, -(int)hlen, BPF_ADJ_ROOM_NET, 0);
	return SG_PASS;
}

SEC("xdp.frags")
int sg_mfloor_pop_xdp(struct xdp_md *ctx)
{
	__u8 *eh = sg_xdp_dest_opts(ctx);
	if (!eh || !sg_mfloor_is_ours(eh))
		return XDP_PASS;
	sg_mfloor_record(eh, (void *)(long)ctx->data_end);
	return sg_xdp_strip(ctx, sg_hlen(sg_mfloor_mode), eh[0]) == -2 ? XDP_DROP : XDP_PASS;
}
