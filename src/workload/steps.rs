//! Timed step sequences (rm -rf, tar zxf, sync, ...), measured as time(1) does.
