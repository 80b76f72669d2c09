/*
 * float_text.h — doubles in messages, exactly (float_text.c).
 */
#ifndef MODEL_SELECT_FLOAT_TEXT_H
#define MODEL_SELECT_FLOAT_TEXT_H

extern char *exact_text(double value);

#endif
