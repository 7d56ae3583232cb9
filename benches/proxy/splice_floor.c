// The cheapest pass-through a user-space process can offer, run by the proxy benchmarks as a
// reference: what relaying costs on this machine whatever the proxy. Blocking splice(2) through a
// pipe, one thread per direction, no event loop, no accounting.
//
// Usage: splice_floor LISTEN_PORT UPSTREAM_PORT   (both on 127.0.0.1)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

enum { PIPE_BYTES = 1 << 20 };

static int upstream_port;

struct flow {
    int from, to;
};

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static void *relay(void *arg) {
    struct flow *f = arg;
    int pipe_fds[2];
    if (pipe2(pipe_fds, 0) == 0) {
        fcntl(pipe_fds[0], F_SETPIPE_SZ, PIPE_BYTES);
        ssize_t n;
        while ((n = splice(f->from, NULL, pipe_fds[1], NULL, PIPE_BYTES, SPLICE_F_MOVE)) > 0) {
            while (n > 0) {
                ssize_t m = splice(pipe_fds[0], NULL, f->to, NULL, n, SPLICE_F_MOVE);
                if (m <= 0) goto done;
                n -= m;
            }
        }
    done:
        close(pipe_fds[0]);
        close(pipe_fds[1]);
    }
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
        struct flow request = {client, server}, response = {server, client};
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
    if (argc != 3) {
        fprintf(stderr, "usage: %s LISTEN_PORT UPSTREAM_PORT\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    upstream_port = atoi(argv[2]);
    int one = 1, listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = loopback(atoi(argv[1]));
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listener, 1024) != 0) {
        perror("splice_floor: listen");
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
