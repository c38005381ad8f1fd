/*
 * udp_sender: the observe workload's UDP sender in C, reporting through
 * liboml2's API (<oml2/omlc.h>) as instrumented C applications do. The
 * runner (crates/observe/src/c_sender.rs) compiles it against our liboml2
 * and against the reference one and runs it in the sender's namespace.
 *
 * It does what the Rust sender of crates/observe/src/udp.rs does: --threads
 * threads, each with its own connected socket and an even share of --rate
 * (0 = as fast as possible), --size-byte datagrams carrying the sequence
 * number in their first 8 bytes (big-endian), the clock, pacing and stop
 * checked every 16 packets; instrumented, one omlc_inject of
 * (seq uint64, bytes uint32) into measurement point `udp_tx` per datagram
 * (a filtered run adds --oml-samples 100 to the command line: the library
 * then aggregates 100 injects per row).
 *
 * Protocol with the runner:
 *   --counter FILE  an 8-byte file this program maps and keeps the number
 *                   of datagrams sent in (an atomic store after each send),
 *                   which the runner samples without a system call here;
 *   stdout "ready"  printed once the library is started and the sockets
 *                   exist; the program then waits for one byte on stdin
 *                   (the start signal: the runner's clock starts then);
 *   stdout "sent=N reported=N" after the threads stop and omlc_close
 *                   returned (every report flushed to the collector).
 * --plain runs without calling liboml2 at all (the uninstrumented level).
 * Exit status 0, 1 on an error (a failed inject included), 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <oml2/omlc.h>

static OmlMPDef defs[] = {
  {"seq", OML_UINT64_VALUE},
  {"bytes", OML_UINT32_VALUE},
  {NULL, (OmlValueT)0},
};

/* One sender thread's share of the work. */
struct sender {
  pthread_t thread;
  int fd;
  long size;
  double rate; /* packets/s of this thread, 0 = unpaced */
  double secs;
  OmlMP *mp;   /* NULL: uninstrumented */
  unsigned long long reported;
  int failed;
};

/* Datagrams sent by all threads: lives in the --counter mapping. */
static uint64_t *sent_total;

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  nanosleep(&ts, NULL);
}

static long arg_long(const char *s, const char *name, long lo, long hi)
{
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "udp_sender: %s must be %ld to %ld\n", name, lo, hi);
    exit(2);
  }
  return v;
}

static void *send_loop(void *arg)
{
  struct sender *s = arg;
  char payload[65536];
  uint64_t seq = 0;
  double t0 = now_s();
  OmlValueU v[2];

  memset(payload, 0, sizeof payload);
  omlc_zero_array(v, 2);
  for (;;) {
    if (seq % 16 == 0) {
      double now = now_s() - t0;
      if (now >= s->secs)
        break;
      if (s->rate > 0) {
        uint64_t due = (uint64_t)(now * s->rate);
        if (seq >= due) {
          double ahead = (double)(seq - due) / s->rate;
          sleep_s(ahead > 50e-6 ? ahead : 50e-6);
          continue;
        }
      }
    }
    {
      int i;
      for (i = 0; i < 8; i++)
        payload[i] = (char)(seq >> (56 - 8 * i));
    }
    if (send(s->fd, payload, (size_t)s->size, 0) < 0) {
      if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR)
        continue;
      perror("udp_sender: send");
      s->failed = 1;
      return NULL;
    }
    seq++;
    __atomic_add_fetch(sent_total, 1, __ATOMIC_RELAXED);
    if (s->mp != NULL) {
      omlc_set_uint64(v[0], seq);
      omlc_set_uint32(v[1], (uint32_t)s->size);
      if (omlc_inject(s->mp, v) != 0) {
        fprintf(stderr, "udp_sender: omlc_inject failed\n");
        s->failed = 1;
        return NULL;
      }
      s->reported++;
    }
  }
  return NULL;
}

int main(int argc, char **argv)
{
  const char *to = NULL, *port = NULL, *counter = NULL;
  long size = 64, rate = 0, threads = 1, millis = 1000, t;
  int a, plain = 0, failed = 0, fd;
  unsigned long long reported = 0;
  struct sender *senders;
  struct addrinfo hints, *ai;
  OmlMP *mp = NULL;
  char go;

  /* --plain is looked for before omlc_init: an uninstrumented run never
   * enters the library. */
  for (a = 1; a < argc; a++)
    if (strcmp(argv[a], "--plain") == 0)
      plain = 1;
  if (!plain && omlc_init("udp_sender", &argc, (const char **)argv, NULL) != 0)
    return 1;
  for (a = 1; a < argc; a++) {
    const char *k = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
    if (strcmp(k, "--plain") == 0)
      continue;
    if (v == NULL) {
      fprintf(stderr, "udp_sender: %s needs a value\n", k);
      return 2;
    }
    a++;
    if (strcmp(k, "--to") == 0)
      to = v;
    else if (strcmp(k, "--port") == 0)
      port = v;
    else if (strcmp(k, "--counter") == 0)
      counter = v;
    else if (strcmp(k, "--size") == 0)
      size = arg_long(v, k, 8, 65000);
    else if (strcmp(k, "--rate") == 0)
      rate = arg_long(v, k, 0, 1000000000L);
    else if (strcmp(k, "--threads") == 0)
      threads = arg_long(v, k, 1, 16);
    else if (strcmp(k, "--millis") == 0)
      millis = arg_long(v, k, 1, 3600000);
    else {
      fprintf(stderr, "udp_sender: unknown option %s\n", k);
      return 2;
    }
  }
  if (to == NULL || port == NULL || counter == NULL) {
    fprintf(stderr, "udp_sender: --to, --port and --counter are required\n");
    return 2;
  }
  fd = open(counter, O_RDWR);
  if (fd < 0) {
    perror("udp_sender: --counter");
    return 1;
  }
  sent_total = mmap(NULL, sizeof *sent_total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (sent_total == MAP_FAILED) {
    perror("udp_sender: mapping --counter");
    return 1;
  }
  if (!plain) {
    mp = omlc_add_mp("udp_tx", defs);
    if (mp == NULL || omlc_start() != 0)
      return 1;
  }
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  if (getaddrinfo(to, port, &hints, &ai) != 0) {
    fprintf(stderr, "udp_sender: bad address %s port %s\n", to, port);
    return 2;
  }
  senders = calloc((size_t)threads, sizeof *senders);
  if (senders == NULL)
    return 1;
  for (t = 0; t < threads; t++) {
    struct sender *s = &senders[t];
    s->fd = socket(ai->ai_family, SOCK_DGRAM, 0);
    if (s->fd < 0 || connect(s->fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      perror("udp_sender: sender socket");
      return 1;
    }
    s->size = size;
    s->rate = (double)rate / (double)threads;
    s->secs = (double)millis / 1000.0;
    s->mp = mp;
  }
  freeaddrinfo(ai);
  printf("ready\n");
  fflush(stdout);
  if (read(0, &go, 1) != 1) {
    fprintf(stderr, "udp_sender: no start signal on standard input\n");
    return 1;
  }
  for (t = 0; t < threads; t++)
    if (pthread_create(&senders[t].thread, NULL, send_loop, &senders[t]) != 0) {
      perror("udp_sender: pthread_create");
      return 1;
    }
  for (t = 0; t < threads; t++) {
    pthread_join(senders[t].thread, NULL);
    failed |= senders[t].failed;
    reported += senders[t].reported;
    close(senders[t].fd);
  }
  if (!plain)
    omlc_close();
  printf("sent=%llu reported=%llu\n",
         (unsigned long long)__atomic_load_n(sent_total, __ATOMIC_RELAXED), reported);
  free(senders);
  return failed;
}
