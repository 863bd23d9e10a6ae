# A multi-process pipeline with exec: sort and gzip over a file.
sort -r "$1" | gzip -1 -c | wc -c
