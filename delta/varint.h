/*
 * Private to eq_delta: unsigned LEB128 varints, as method 1's control
 * stream and the gzip region table write them.
 */
#ifndef EQ_VARINT_H
#define EQ_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* Writes @v to @p (at most 10 bytes) and returns the count. */
static inline size_t eq_uvarint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

#endif
