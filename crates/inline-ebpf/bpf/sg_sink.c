// SPDX-License-Identifier: GPL-2.0 OR MIT
/* tc ingress: recognise a Destination Options header written by sg_source,
 * push one record per measured packet into the ring buffer and remove the
 * header so the stack and applications see the original packet. A header
 * that is not exactly one of our layouts is left alone. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "sg_maps.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Records to the agent; max_entries (bytes) is set by the agent. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} sg_records SEC(".maps");

/* Wake the reader once per this many records of a CPU (~64 KiB of ring):
 * a wake-up per record costs microseconds; the agent also polls with a short
 * timeout. */
#define SG_WAKE_RECORDS 1024

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
	__u8 accept = cfg->mode;
	__u32 hlen = 0, seq = 0;
	__u64 src_ts = 0;
	__u8 kind = 0;
	__u8 hdrlen = eh[1];

	if (hdrlen == 0 && eh[2] == cfg->loss_type && eh[3] == 4 && (accept & SG_MODE_LOSS)) {
		hlen = 8;
		kind = SG_MODE_LOSS;
		seq = sg_be32(eh + 4);
	} else if (hdrlen == 1 && (accept & SG_MODE_PDM)) {
		if ((void *)eh + 16 > data_end)
			return SG_PASS;
		if (eh[2] == SG_PDM_TYPE && eh[3] == 10 && eh[14] == 1 && eh[15] == 0) {
			hlen = 16;
			kind = SG_MODE_PDM;
			seq = ((__u32)eh[6] << 8) | eh[7];
		}
	} else if (hdrlen == 2 && (accept & SG_MODE_DELAY)) {
		if ((void *)eh + 24 > data_end)
			return SG_PASS;
		if (eh[2] == 1 && eh[3] == 2 && eh[4] == 0 && eh[5] == 0 &&
		    eh[6] == cfg->delay_type && eh[7] == 16) {
			hlen = 24;
			kind = SG_MODE_DELAY;
			src_ts = sg_be64(eh + 8);
		}
	} else if (hdrlen == 3 && (accept & (SG_MODE_DELAY | SG_MODE_LOSS)) == (SG_MODE_DELAY | SG_MODE_LOSS)) {
		if ((void *)eh + 32 > data_end)
			return SG_PASS;
		if (eh[2] == cfg->loss_type && eh[3] == 4 && eh[8] == 1 && eh[9] == 4 &&
		    eh[14] == cfg->delay_type && eh[15] == 16) {
			hlen = 32;
			kind = SG_MODE_DELAY | SG_MODE_LOSS;
			seq = sg_be32(eh + 4);
			src_ts = sg_be64(eh + 16);
		}
	}
	if (!hlen) {
		sg_count(SG_C_SINK_FOREIGN);
		return SG_PASS;
	}
	sg_count(SG_C_SINK_MARKED);
	__u64 dst_ts = sg_ntp_at(bpf_ktime_get_ns());
	__u8 nh = eh[0];
	__u16 plen = bpf_ntohs(ip6->payload_len);

	struct sg_record *r = bpf_ringbuf_reserve(&sg_records, sizeof(*r), 0);
	if (r) {
		__builtin_memcpy(r->flow.src, &ip6->saddr, 16);
		__builtin_memcpy(r->flow.dst, &ip6->daddr, 16);
		r->flow.sport = 0;
		r->flow.dport = 0;
		r->flow.proto = nh;
		r->flow._pad[0] = r->flow._pad[1] = r->flow._pad[2] = 0;
		if (nh == IPPROTO_TCP || nh == IPPROTO_UDP) {
			__u16 *ports = (void *)eh + hlen;
			if ((void *)(ports + 2) <= data_end) {
				r->flow.sport = bpf_ntohs(ports[0]);
				r->flow.dport = bpf_ntohs(ports[1]);
			}
		}
		r->seq = seq;
		r->kind = kind;
		r->_pad[0] = r->_pad[1] = r->_pad[2] = 0;
		r->src_ts = src_ts;
		r->dst_ts = dst_ts;
		/* This CPU's record counter decides the wake-up: asking the
		 * ring how much is queued reads the consumer's cache line. */
		__u32 idx = SG_C_SINK_RECORDS;
		__u64 *n = bpf_map_lookup_elem(&sg_counters, &idx);
		__u64 made = n ? ++*n : 0;
		bpf_ringbuf_submit(r, made % SG_WAKE_RECORDS == 0 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	} else {
		sg_count(SG_C_SINK_RING_DROPS);
	}

	struct {
		__be16 plen;
		__u8 nexthdr;
	} __attribute__((packed)) fix = { bpf_htons(plen - hlen), nh };
	if (bpf_skb_store_bytes(skb, SG_ETH_HLEN + 4, &fix, 3, BPF_F_RECOMPUTE_CSUM) ||
	    bpf_skb_adjust_room(skb, -(__s32)hlen, BPF_ADJ_ROOM_NET, 0)) {
		sg_count(SG_C_SINK_ERROR);
	}
	return SG_PASS;
}
