// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Sink: recognise a Destination Options header written by sg_source, record
 * the measured packet and remove the header so the stack and applications
 * see the original packet. A header that is not exactly one of our layouts
 * is left alone. Two entry points with the same behaviour:
 *
 * - sg_sink (tc ingress): works on any interface;
 * - sg_sink_xdp (XDP): runs before the kernel builds an skb on drivers with
 *   native XDP (veth included), and strips by moving the 54 bytes of
 *   Ethernet + IPv6 header forward instead of calling skb helpers
 *   (sg_xdp.h).
 *
 * Records are cheap on purpose (docs/benchmarks.md, "In-line"): the clock is
 * read once (CLOCK_MONOTONIC; the agent converts it to wall-clock NTP time),
 * and only with a delay option (loss and PDM records, whose arrival time
 * nothing is computed from, take CLOCK_MONOTONIC_COARSE, the last tick),
 * records are batched per CPU and pushed SG_BATCH at a time with one
 * bpf_ringbuf_output, and the record/marked counters move once per batch. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "sg_maps.h"
#include "sg_xdp.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Linux >= 6.7: run the timer callback on the CPU that armed it. The UAPI
 * headers of older distributions lack the name. */
#ifndef BPF_F_TIMER_CPU_PIN
#define BPF_F_TIMER_CPU_PIN (1ULL << 1)
#endif
#define SG_CLOCK_MONOTONIC 1

/* Records to the agent; max_entries (bytes) is set by the agent. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} sg_records SEC(".maps");

/* A partly filled batch is pushed at the latest this long after its first
 * record (the agent waits over twice this before its last drain). Not
 * shorter: with a 2 ms timer, TCP through a veth (iperf3, ~35 000 GSO
 * packets/s) lost a fifth of its rate to the timer's callbacks alone
 * (docs/benchmarks.md, "In-line", C); at 20 ms it loses ~6 %. */
#define SG_FLUSH_NS (20 * 1000 * 1000)
/* Wake the reader once per this many full batches of a CPU (~64 KiB of
 * ring): a wake-up per record costs microseconds; the agent also polls. */
#define SG_WAKE_BATCHES 64

/* One CPU's pending records. Only its own CPU touches a slot: the sink
 * runs in softirq context and the pinned timer's callback too, so the two
 * never interleave on a CPU and no atomics are needed. */
struct sg_batch {
	struct bpf_timer timer;
	__u32 n;
	__u8 armed;
	__u8 inited;
	__u16 _pad;
	__u64 batches;
	struct sg_record recs[SG_BATCH];
};

/* Indexed by CPU; max_entries is set by the agent to the possible CPUs. An
 * array rather than a per-CPU array because timers cannot live in per-CPU
 * maps. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct sg_batch);
} sg_batches SEC(".maps");

/* What the header said. */
struct sg_mark {
	__u32 hlen;
	__u32 seq;
	__u64 src_ts;
	__u8 kind;
	__u8 nh;
};

static __always_inline __u64 sg_be64(const __u8 *p)
{
	__u64 v;
	__builtin_memcpy(&v, p, 8);
	return bpf_be64_to_cpu(v);
}

static __always_inline __u32 sg_be32(const __u8 *p)
{
	__u32 v;
	__builtin_memcpy(&v, p, 4);
	return bpf_ntohl(v);
}

/* Push `b`'s records (if any) into the ring buffer in one sample. */
static __always_inline void sg_flush(struct sg_batch *b, int wake)
{
	__u32 n = b->n;
	if (n == 0)
		return;
	if (n > SG_BATCH)
		n = SG_BATCH;
	b->n = 0;
	b->batches += 1;
	__u64 flags = (wake || b->batches % SG_WAKE_BATCHES == 0) ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	long err = bpf_ringbuf_output(&sg_records, b->recs, n * sizeof(struct sg_record), flags);
	sg_add(err ? SG_C_SINK_RING_DROPS : SG_C_SINK_RECORDS, n);
	sg_add(SG_C_SINK_MARKED, n);
}

/* Timer callback: the batch has waited SG_FLUSH_NS; push it and wake the
 * reader (traffic is slow, nobody else will). */
static int sg_flush_cb(void *map, __u32 *key, struct sg_batch *b)
{
	b->armed = 0;
	sg_flush(b, 1);
	return 0;
}

/* Which of our layouts `eh` (8 bytes known readable) is; 0 = none. */
static __always_inline int sg_parse(const __u8 *eh, const void *data_end, const struct sg_config *cfg,
				    struct sg_mark *m)
{
	__u8 accept = cfg->mode;
	__u8 hdrlen = eh[1];
	m->nh = eh[0];
	m->seq = 0;
	m->src_ts = 0;
	if (hdrlen == 0 && eh[3] == 4) {
		if (eh[2] == cfg->loss_type && (accept & SG_MODE_LOSS)) {
			m->hlen = 8;
			m->kind = SG_MODE_LOSS;
			m->seq = sg_be32(eh + 4);
			return 1;
		}
		if (eh[2] == cfg->delay_type && (accept & SG_MODE_COMPACT)) {
			m->hlen = 8;
			m->kind = SG_MODE_DELAY | SG_MODE_COMPACT;
			m->src_ts = sg_be32(eh + 4);
			return 1;
		}
		return 0;
	}
	if (hdrlen == 1 && (accept & SG_MODE_PDM)) {
		if ((void *)eh + 16 > data_end)
			return 0;
		if (eh[2] == SG_PDM_TYPE && eh[3] == 10 && eh[14] == 1 && eh[15] == 0) {
			m->hlen = 16;
			m->kind = SG_MODE_PDM;
			m->seq = ((__u32)eh[6] << 8) | eh[7];
			return 1;
		}
		return 0;
	}
	if (hdrlen == 2 && (accept & SG_MODE_DELAY)) {
		if ((void *)eh + 24 > data_end)
			return 0;
		if (eh[2] == 1 && eh[3] == 2 && eh[4] == 0 && eh[5] == 0 && eh[6] == cfg->delay_type && eh[7] == 16) {
			m->hlen = 24;
			m->kind = SG_MODE_DELAY;
			m->src_ts = sg_be64(eh + 8);
			return 1;
		}
		return 0;
	}
	if (hdrlen == 3 && (accept & (SG_MODE_DELAY | SG_MODE_LOSS)) == (SG_MODE_DELAY | SG_MODE_LOSS)) {
		if ((void *)eh + 32 > data_end)
			return 0;
		if (eh[2] == cfg->loss_type && eh[3] == 4 && eh[8] == 1 && eh[9] == 4 && eh[14] == cfg->delay_type &&
		    eh[15] == 16) {
			m->hlen = 32;
			m->kind = SG_MODE_DELAY | SG_MODE_LOSS;
			m->seq = sg_be32(eh + 4);
			m->src_ts = sg_be64(eh + 16);
			return 1;
		}
	}
	return 0;
}

/* Append one record to this CPU's batch; push the batch when it is full,
 * else make sure a timer will push it. */
static __always_inline void sg_record(const struct ipv6hdr *ip6, const __u8 *eh, const void *data_end,
				      const struct sg_mark *m)
{
	/* Only a delay is computed from the arrival time: records without a
	 * delay option (loss, PDM) take the coarse monotonic clock (the last
	 * tick, same base; no clock read), the others the precise one. */
	__u64 now = (m->kind & SG_MODE_DELAY) ? bpf_ktime_get_ns() : bpf_ktime_get_coarse_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	struct sg_batch *b = bpf_map_lookup_elem(&sg_batches, &cpu);
	if (!b) {
		sg_count(SG_C_SINK_RING_DROPS);
		sg_count(SG_C_SINK_MARKED);
		return;
	}
	__u32 n = b->n;
	if (n >= SG_BATCH) {
		sg_flush(b, 0);
		n = 0;
	}
	struct sg_record *r = &b->recs[n];
	__builtin_memcpy(r->flow.src, &ip6->saddr, 16);
	__builtin_memcpy(r->flow.dst, &ip6->daddr, 16);
	r->flow.sport = 0;
	r->flow.dport = 0;
	r->flow.proto = m->nh;
	r->flow._pad[0] = r->flow._pad[1] = r->flow._pad[2] = 0;
	if (m->nh == IPPROTO_TCP || m->nh == IPPROTO_UDP) {
		/* Masked: a bounded offset for the verifier (hlen is 8 to 32). */
		const __u16 *ports = (const void *)eh + (m->hlen & 63);
		if ((void *)(ports + 2) <= data_end) {
			r->flow.sport = bpf_ntohs(ports[0]);
			r->flow.dport = bpf_ntohs(ports[1]);
		}
	}
	r->seq = m->seq;
	r->kind = m->kind | SG_KIND_MONO_DST;
	r->_pad[0] = r->_pad[1] = r->_pad[2] = 0;
	r->src_ts = m->src_ts;
	r->dst_ts = now;
	b->n = n + 1;
	if (n + 1 >= SG_BATCH) {
		sg_flush(b, 0);
	} else if (!b->armed) {
		if (!b->inited) {
			bpf_timer_init(&b->timer, &sg_batches, SG_CLOCK_MONOTONIC);
			bpf_timer_set_callback(&b->timer, sg_flush_cb);
			b->inited = 1;
		}
		b->armed = 1;
		if (bpf_timer_start(&b->timer, SG_FLUSH_NS, BPF_F_TIMER_CPU_PIN)) {
			/* No pinned timers (Linux < 6.7): an unpinned callback
			 * could race this CPU, so do without batching. */
			b->armed = 0;
			sg_flush(b, 0);
		}
	}
}

SEC("tc")
int sg_sink(struct __sk_buff *skb)
{
	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return SG_PASS;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	if (data + SG_EH_OFF + 2 > data_end)
		return SG_PASS;
	struct ipv6hdr *ip6 = data + SG_ETH_HLEN;
	if (ip6->nexthdr != SG_NEXTHDR_DEST)
		return SG_PASS;
	struct sg_config *cfg = sg_get_config();
	if (!cfg || !cfg->enabled)
		return SG_PASS;
	/* Our longest header plus the ports behind it. */
	if (data + SG_EH_OFF + 32 + 4 > data_end) {
		bpf_skb_pull_data(skb, SG_EH_OFF + 32 + 4);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		if (data + SG_EH_OFF + 8 > data_end)
			return SG_PASS;
		ip6 = data + SG_ETH_HLEN;
	}
	__u8 *eh = data + SG_EH_OFF;
	struct sg_mark m;
	if (!sg_parse(eh, data_end, cfg, &m)) {
		sg_count(SG_C_SINK_FOREIGN);
		return SG_PASS;
	}
	__u16 plen = bpf_ntohs(ip6->payload_len);
	sg_record(ip6, eh, data_end, &m);

	struct {
		__be16 plen;
		__u8 nexthdr;
	} __attribute__((packed)) fix = { bpf_htons(plen - m.hlen), m.nh };
	if (bpf_skb_store_bytes(skb, SG_ETH_HLEN + 4, &fix, 3, BPF_F_RECOMPUTE_CSUM) ||
	    bpf_skb_adjust_room(skb, -(__s32)m.hlen, BPF_ADJ_ROOM_NET, 0)) {
		sg_count(SG_C_SINK_ERROR);
	}
	return SG_PASS;
}

SEC("xdp.frags")
int sg_sink_xdp(struct xdp_md *ctx)
{
	__u8 *eh = sg_xdp_dest_opts(ctx);
	if (!eh)
		return XDP_PASS;
	struct sg_config *cfg = sg_get_config();
	if (!cfg || !cfg->enabled)
		return XDP_PASS;
	void *data_end = (void *)(long)ctx->data_end;
	struct sg_mark m;
	if (!sg_parse(eh, data_end, cfg, &m)) {
		sg_count(SG_C_SINK_FOREIGN);
		return XDP_PASS;
	}
	sg_record((const struct ipv6hdr *)(eh - SG_IP6_HLEN), eh, data_end, &m);
	int err = sg_xdp_strip(ctx, m.hlen, m.nh);
	if (err) {
		sg_count(SG_C_SINK_ERROR);
		return err == -2 ? XDP_DROP : XDP_PASS;
	}
	return XDP_PASS;
}
