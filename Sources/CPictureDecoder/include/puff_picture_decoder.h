#ifndef PUFF_PICTURE_DECODER_H
#define PUFF_PICTURE_DECODER_H
/* The confined picture decoder of the client kit (Sources/PuffClientPicture/UserPicture.swift).
 *
 * A program linked with the kit and started as `PROGRAM --puff-decode-picture` (exactly that one
 * argument) never reaches its main: a constructor in decoder.c turns it into the decoder child,
 * which reads a PNG or JPEG file's bytes on standard input and answers on standard output with
 * the width and the height (two 32-bit little-endian numbers) and width x height x 4 bytes of
 * RGBA, then exits 0. Any other exit status means no picture. */

/* The one argument that makes a program the decoder child. */
#define PUFF_DECODER_ARGUMENT "--puff-decode-picture"
/* Most bytes of input (PictureFile.maximumSize: 32 MiB). */
#define PUFF_DECODER_MAX_INPUT 33554432
/* Largest picture: 64 megapixels, neither side above 100000 pixels. */
#define PUFF_DECODER_MAX_PIXELS 67108864
#define PUFF_DECODER_MAX_SIDE 100000
/* The child's address space (the largest picture's pixels twice over, and the file) and CPU time. */
#define PUFF_DECODER_MEMORY 671088640
#define PUFF_DECODER_SECONDS 20

/* The decoder child's whole run; its exit status (0: a picture was written). */
int puff_decoder_run(void);

#endif
