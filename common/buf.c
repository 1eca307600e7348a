#include <stdio.h>
#include <string.h>

#include "eq/common.h"

void eq_buf_init(struct eq_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void eq_buf_done(struct eq_buf *b)
{
	eq_free(b->data);
	eq_buf_init(b, b->max);
}

void eq_buf_reset(struct eq_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static eq_err reserve(struct eq_buf *b, size_t extra, struct eq_error *err)
{
	if (extra > b->max || b->len > b->max - extra)
		return eq_error_set(err, EQ_ERR_LIMIT, "buffer would exceed its limit of %zu bytes", b->max);
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return EQ_OK;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (b->max < SIZE_MAX && cap > b->max + 1) /* max + 1 would wrap for an unbounded buffer */
		cap = b->max + 1;
	uint8_t *d = eq_realloc(b->data, cap);
	if (!d)
		return eq_error_set(err, EQ_ERR_NOMEM, "cannot grow buffer to %zu bytes", cap);
	b->data = d;
	b->cap = cap;
	return EQ_OK;
}

eq_err eq_buf_append(struct eq_buf *b, const void *data, size_t len, struct eq_error *err)
{
	eq_err r = reserve(b, len, err);
	if (r)
		return r;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return EQ_OK;
}

eq_err eq_buf_printf(struct eq_buf *b, struct eq_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return eq_error_set(err, EQ_ERR_INVAL, "bad format string");
	eq_err r = reserve(b, (size_t)n, err);
	if (r)
		return r;
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return EQ_OK;
}

uint8_t *eq_buf_steal(struct eq_buf *b, size_t *ret_len)
{
	uint8_t *d = b->data;
	if (ret_len)
		*ret_len = b->len;
	eq_buf_init(b, b->max);
	return d;
}
