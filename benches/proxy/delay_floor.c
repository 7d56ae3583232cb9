// The cheapest delaying relay a user-space process can be, run by the proxy benchmarks as a reference
// for the CPU a delay costs on this machine whatever the proxy: one blocking thread per direction, and
// on the response flow each read waits until DELAY_US after it came (clock_nanosleep on an absolute
// deadline, timer slack 1 ns) before it is written. No event loop, no accounting, no randomness.
//
// Usage: delay_floor LISTEN_PORT UPSTREAM_PORT DELAY_US   (both on 127.0.0.1; DELAY_US 0 relays at once)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { BUFFER_BYTES = 64 * 1024 };

static int upstream_port;
static long delay_ns;

struct flow {
    int from, to;
    int delayed;
};

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static void wait_until_due(const struct timespec *came) {
    struct timespec due = *came;
    due.tv_nsec += delay_ns;
    due.tv_sec += due.tv_nsec / 1000000000L;
    due.tv_nsec %= 1000000000L;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) != 0) {
    }
}

static void *relay(void *arg) {
    struct flow *f = arg;
    static __thread char buffer[BUFFER_BYTES];
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    ssize_t n;
    while ((n = read(f->from, buffer, sizeof buffer)) > 0) {
        if (f->delayed && delay_ns > 0) {
            struct timespec came;
            clock_gettime(CLOCK_MONOTONIC, &came);
            wait_until_due(&came);
        }
        for (ssize_t sent = 0; sent < n;) {
            ssize_t m = write(f->to, buffer + sent, n - sent);
            if (m <= 0) goto done;
            sent += m;
        }
    }
done:
    shutdown(f->to, SHUT_WR);
    return NULL;
}

static void *serve(void *arg) {
    int client = (int)(long)arg, one = 1;
    int server = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in up = loopback(upstream_port);
    if (server >= 0 && connect(server, (struct sockaddr *)&up, sizeof up) == 0) {
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct flow request = {client, server, 0}, response = {server, client, 1};
        pthread_t t;
        if (pthread_create(&t, NULL, relay, &request) == 0) {
            relay(&response);
            pthread_join(t, NULL);
        }
    }
    if (server >= 0) close(server);
    close(client);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s LISTEN_PORT UPSTREAM_PORT DELAY_US\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    upstream_port = atoi(argv[2]);
    delay_ns = atol(argv[3]) * 1000L;
    int one = 1, listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = loopback(atoi(argv[1]));
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listener, 1024) != 0) {
        perror("delay_floor: listen");
        return 1;
    }
    for (;;) {
        int client = accept(listener, NULL, NULL);
        if (client < 0) continue;
        pthread_t t;
        if (pthread_create(&t, NULL, serve, (void *)(long)client) == 0)
            pthread_detach(t);
        else
            close(client);
    }
}
