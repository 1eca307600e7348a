#include <pthread.h>

#include "eq/common.h"

struct parallel {
	size_t n, next;
	void (*fn)(void *ctx, size_t i);
	void *ctx;
	pthread_mutex_t mu;
};

static void *parallel_worker(void *arg)
{
	struct parallel *w = arg;
	for (;;) {
		pthread_mutex_lock(&w->mu);
		size_t i = w->next++;
		pthread_mutex_unlock(&w->mu);
		if (i >= w->n)
			return NULL;
		w->fn(w->ctx, i);
	}
}

void eq_parallel(size_t n, size_t threads, void (*fn)(void *ctx, size_t i), void *ctx)
{
	struct parallel w = {.n = n, .fn = fn, .ctx = ctx};
	pthread_t th[EQ_PARALLEL_MAX];
	size_t want = threads < n ? threads : n, started = 0;
	if (want > EQ_PARALLEL_MAX)
		want = EQ_PARALLEL_MAX;
	pthread_mutex_init(&w.mu, NULL);
	/* This thread is one of them; one that cannot start leaves its share
	 * to the others. */
	while (started + 1 < want && pthread_create(&th[started], NULL, parallel_worker, &w) == 0)
		started++;
	parallel_worker(&w);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&w.mu);
}
