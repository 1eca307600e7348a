/* CRC-32 for the U-Boot environment: a few KiB, so no table. */
#include <eq/common.h>

uint32_t eq_crc32(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < len; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
	}
	return ~c;
}
