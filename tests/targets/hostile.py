# A source file whose text would break naive exporters: </script><script>document.title='pwned'</script>
import time

BAD = "</script><script>document.title='pwned'</script><!-- & &amp; \u2028 ; a;b 12"


def hostile_spin():  # <img src=x onerror="document.title='pwned'">; c 7
    deadline = time.perf_counter() + 0.3
    text = ""
    while time.perf_counter() < deadline:
        text = BAD + "</script><script>document.title='pwned'</script>"  # hot line
    return text


hostile_spin()
