package modelsig

var PyBytesRepr = pyBytesRepr

var PAECompat = paeCompat
