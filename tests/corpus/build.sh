# A parallel build of a real C project: binutils' libsframe (three C
# files), configured by corpus_setup as a shared library only, built with
# make -j2 from clean:
#   sh build.sh DIR     DIR is the configured libsframe directory
# make runs libtool (a bash script) for each object and for the link;
# libtool runs gcc, which runs cc1 and as for each file, and collect2
# and ld for the shared library.
cd "$1" || exit 1
make -s mostlyclean || exit 1
exec make -j2 libsframe.la
