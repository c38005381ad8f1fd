/*
 * udp_observer: the observer effect of liboml2 on a UDP sender.
 *
 * The configuration instrumented applications run: a C program reporting
 * every packet it sends through <oml2/omlc.h> (one omlc_inject of
 * (seq uint64, bytes uint32) per datagram), the collection server in
 * another process. The driver, `streamgauge bench c-observer`, starts the
 * server, runs this program with --oml-collect, and checks the rows stored.
 *
 * A receiver thread counts datagrams on 127.0.0.1; the main thread sends
 * --size-byte datagrams to it as fast as it can for --millis per round.
 * Rounds alternate plain, instrumented (--rounds of each), so that drift
 * and noise hit both kinds alike. Both kinds read the clock every 256
 * packets and run the same loop; only the inject differs.
 *
 * Output on stdout, one line per round and a last one:
 *   round kind=plain sent=N received=N secs=S
 *   round kind=instrumented sent=N received=N secs=S
 *   cpu thread=NAME secs=S     (one per thread, before omlc_close)
 *   reported=N
 * The cpu lines (user + system time of each thread of this process, from
 * /proc/self/task) show where the cycles go: the sender, the receiver, and
 * the library's writer and sender threads.
 * Exit status 0, or 1 on any error (failed inject included).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <oml2/omlc.h>

static OmlMPDef defs[] = {
  {"seq", OML_UINT64_VALUE},
  {"bytes", OML_UINT32_VALUE},
  {NULL, (OmlValueT)0},
};

static int rx_fd;
static unsigned long received;
static int stopping;

static void *receive(void *arg)
{
  char buf[65536];
  (void)arg;
  prctl(PR_SET_NAME, "udp-rx", 0, 0, 0);
  while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
    if (recv(rx_fd, buf, sizeof buf, 0) >= 0)
      __atomic_add_fetch(&received, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long arg_long(const char *s, const char *name, long lo, long hi)
{
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "udp_observer: %s must be %ld to %ld\n", name, lo, hi);
    exit(2);
  }
  return v;
}

/* Prints the CPU time of every thread of this process (Linux /proc). */
static void thread_cpu(void)
{
  long ticks = sysconf(_SC_CLK_TCK);
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;

  if (d == NULL || ticks <= 0)
    return;
  while ((e = readdir(d)) != NULL) {
    char path[300], buf[1024], name[64];
    const char *close_paren, *open_paren;
    unsigned long utime, stime;
    size_t len, i;
    FILE *f;

    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    f = fopen(path, "r");
    if (f == NULL)
      continue;
    len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    open_paren = strchr(buf, '(');
    close_paren = strrchr(buf, ')');
    if (open_paren == NULL || close_paren == NULL || close_paren < open_paren)
      continue;
    len = (size_t)(close_paren - open_paren - 1);
    if (len >= sizeof name)
      len = sizeof name - 1;
    for (i = 0; i < len; i++)
      name[i] = open_paren[1 + i] == ' ' ? '_' : open_paren[1 + i];
    name[len] = '\0';
    /* After the name: state, then 10 fields, then utime and stime. */
    if (sscanf(close_paren + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
               &stime) == 2)
      printf("cpu thread=%s secs=%.3f\n", name, (double)(utime + stime) / (double)ticks);
  }
  closedir(d);
}

/* One round; returns 0 or -1. */
static int round_(struct sockaddr_in *to, OmlMP *mp, long size, double secs,
                  unsigned long long *seq, unsigned long long *reported)
{
  char payload[65536];
  unsigned long long sent = 0;
  unsigned long before = __atomic_load_n(&received, __ATOMIC_RELAXED);
  double t0, t1;
  struct timespec settle = {0, 100000000};
  OmlValueU v[2];
  int fd = socket(AF_INET, SOCK_DGRAM, 0);

  if (fd < 0 || connect(fd, (struct sockaddr *)to, sizeof *to) != 0) {
    perror("udp_observer: sender socket");
    return -1;
  }
  memset(payload, 0, sizeof payload);
  omlc_zero_array(v, 2);
  t0 = t1 = now_s();
  for (;;) {
    if (sent % 256 == 0 && (t1 = now_s()) - t0 >= secs)
      break;
    ++*seq;
    memcpy(payload, seq, sizeof *seq);
    if (send(fd, payload, (size_t)size, 0) < 0) {
      if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR)
        continue;
      perror("udp_observer: send");
      close(fd);
      return -1;
    }
    sent++;
    if (mp != NULL) {
      omlc_set_uint64(v[0], *seq);
      omlc_set_uint32(v[1], (uint32_t)size);
      if (omlc_inject(mp, v) != 0) {
        fprintf(stderr, "udp_observer: omlc_inject failed\n");
        close(fd);
        return -1;
      }
      ++*reported;
    }
  }
  close(fd);
  /* Let the receiver catch up before reading its count. */
  nanosleep(&settle, NULL);
  printf("round kind=%s sent=%llu received=%lu secs=%.6f\n", mp ? "instrumented" : "plain",
         sent, __atomic_load_n(&received, __ATOMIC_RELAXED) - before, t1 - t0);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv)
{
  long rounds = 5, size = 64, millis = 2000, r;
  unsigned long long seq = 0, reported = 0;
  struct sockaddr_in addr;
  socklen_t len = sizeof addr;
  struct timeval tv = {0, 50000};
  pthread_t rx;
  OmlMP *mp;
  int a, failed = 0;

  if (omlc_init("observer", &argc, (const char **)argv, NULL) != 0)
    return 1;
  for (a = 1; a + 1 < argc; a += 2) {
    const char *k = argv[a], *v = argv[a + 1];
    if (strcmp(k, "--rounds") == 0)
      rounds = arg_long(v, k, 1, 1000);
    else if (strcmp(k, "--size") == 0)
      size = arg_long(v, k, 8, 65000);
    else if (strcmp(k, "--millis") == 0)
      millis = arg_long(v, k, 1, 3600000);
    else {
      fprintf(stderr, "udp_observer: unknown option %s\n", k);
      return 2;
    }
  }
  if (a != argc) {
    fprintf(stderr, "udp_observer: options take one value each\n");
    return 2;
  }
  mp = omlc_add_mp("udp_tx", defs);
  if (mp == NULL || omlc_start() != 0)
    return 1;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  rx_fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (rx_fd < 0 || bind(rx_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      getsockname(rx_fd, (struct sockaddr *)&addr, &len) != 0 ||
      setsockopt(rx_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      pthread_create(&rx, NULL, receive, NULL) != 0) {
    perror("udp_observer: receiver");
    return 1;
  }
  for (r = 0; r < 2 * rounds && !failed; r++)
    failed = round_(&addr, r % 2 ? mp : NULL, size, (double)millis / 1000.0, &seq, &reported) != 0;
  thread_cpu();
  __atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
  pthread_join(rx, NULL);
  omlc_close();
  printf("reported=%llu\n", reported);
  return failed;
}
