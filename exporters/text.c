/* Text buffers and sanitising (text.h). */
#include "grow.h"
#include "text.h"
#include "utf8.h"

int tb_put(struct text_buf *b, const void *s, size_t n)
{
	if (ember_grow((void **)&b->s, &b->cap, 1, b->len + n + 1) < 0)
		return -1;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

int tb_put_clean(struct text_buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len = ember_utf8_next(u + i, n - i, &cp);
		int rc;

		if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
			rc = tb_put(b, " ", 1);
		else if (cp == 0xfffd)
			rc = tb_put(b, "\xef\xbf\xbd", 3);  /* also for ill-formed bytes */
		else
			rc = tb_put(b, u + i, len);
		if (rc < 0)
			return -1;
		i += len;
	}
	return 0;
}
