// The objects of spec/manager-api.md, as the front end uses them.

export interface User {
  id: number;
  username: string;
  role: "admin" | "user";
}

export interface Session {
  user: User;
  csrf_token: string;
}

export interface Site {
  id: number;
  name: string;
  description: string;
}

export interface Capabilities {
  interfaces?: {
    name: string;
    speed_mbps?: number | null;
    operstate?: string | null;
    /** libpcap's name and LINKTYPE_* number; null while the interface's source is closed. */
    link_type?: { name: string; number: number } | null;
  }[];
  features?: string[];
  max_sessions?: number;
  sessions?: number;
  policy?: {
    header_only_forced?: boolean;
    anonymization_mandatory?: boolean;
    max_snaplen?: number | null;
    allowed_interfaces?: string[] | null;
  };
  keys?: string[];
}

/** What an in-line agent says of itself (spec/inline-control.md). */
export interface InlineCapabilities {
  agent?: string;
  roles?: string[];
  interface?: string;
  keys?: { key: string; help?: string; used?: boolean }[];
  modes?: string[];
  counters?: string[];
  domain?: string | null;
  streams?: string[];
}

/** An in-line agent's settings in a configuration (`session` of one for an agent). */
export type InlineSettings = Record<string, string | number | boolean>;

export interface Device {
  id: number;
  name: string;
  kind: "capture" | "inline" | "collector";
  site: number | null;
  hostname: string;
  port: number;
  description: string;
  credential_ref: string | null;
  tls_fingerprint: string | null;
  ca_file: string | null;
  insecure: boolean;
  capabilities: Capabilities | InlineCapabilities | null;
  status: "up" | "down" | "unknown";
  last_seen_unix_s: number | null;
  version: number;
}

export interface Experiment {
  id: number;
  name: string;
  domain: string;
  owner: string;
  members: string[];
  collector: number | null;
  description: string;
  version: number;
}

export interface Shortcuts {
  vlan?: number;
  host?: string;
  src?: string;
  dst?: string;
  port?: number;
  src_port?: number;
  dst_port?: number;
  proto?: string | number;
}

export interface Sampling {
  mode: "all" | "one_in_n" | "probability" | "flow";
  n?: number;
  p?: number;
  seed?: number;
}

export interface Output {
  type: "pcap" | "pcapng" | "ipfix" | "counters";
  target?: { transport: "udp" | "tcp" | "file"; collector?: string; path?: string; template_refresh_s?: number };
  flows?: { idle_timeout_s?: number; active_timeout_s?: number; biflow?: boolean };
  [k: string]: unknown;
}

export interface SessionConfig {
  interface?: string;
  filter?: string;
  shortcuts?: Shortcuts;
  snaplen?: number;
  header_only?: boolean;
  fields?: string[];
  sampling?: Sampling;
  anonymization?: { key: string; fields: "both" | "src" | "dst" };
  outputs?: Output[];
  rollover?: { seconds?: number; bytes?: number };
  quota?: { bytes: number; policy: "stop" | "delete_oldest" };
  counter_interval_s?: number;
}

export interface CaptureConfig {
  id: number;
  experiment: number;
  name: string;
  device: number;
  version: number;
  storage: { type: "local" | "sftp" | "s3"; target?: string | null };
  /** Capture session configuration, or an in-line agent's settings. */
  session: SessionConfig | InlineSettings;
  metadata: Record<string, string>;
}

export interface RunDevice {
  device: number;
  session: string;
  state: string;
  reason: string | null;
}

export interface Run {
  id: number;
  experiment: number;
  config: number;
  state: string;
  created_unix_s: number;
  devices: RunDevice[];
}

export interface RunFile {
  device: number;
  name: string;
  bytes: number;
  modified_unix_s: number;
  url: string;
}

export interface Alert {
  device: number | string;
  kind: "down" | "dropping";
  since: number;
  message: string;
}

export interface Token {
  id: number;
  name: string;
  created_unix_s?: number;
  last_used_unix_s?: number | null;
  secret?: string;
}

export interface StreamField {
  name: string;
  type: string;
  unit?: string;
  /** `counter` for counters (plotted as rates by default). */
  kind?: string;
}

export interface StreamInfo {
  name: string;
  fields: StreamField[];
  rows?: number;
  server_time?: [number, number] | null;
}

/** What a page gets: the element to fill and the route's parameters. */
export interface PageCtx {
  app: HTMLElement;
  params: string[];
  query: URLSearchParams;
  /** Registers work to undo when the page is left (timers, EventSources). */
  onLeave(f: () => void): void;
}
