# Bytes moved and time per link.  Redraw: gnuplot links.gp
set terminal pngcairo size 1100,500 font 'sans,10' noenhanced
set output 'links.png'
set style fill solid 0.85 border -1
set grid ytics lc rgb '#dddddd'
set datafile missing '-'
set style data histograms
set style histogram clustered gap 1
set xtics rotate by -30 nomirror
set key top left
set multiplot layout 1,2 title "googlenet-1200-b10-train"
set title 'bytes over the link per iteration'
set ylabel 'GB (10^9 bytes)'
set yrange [0:*]
plot 'links.dat' using 2:xtic(1) title 'host to device' lc rgb '#1e88e5', '' using 3 title 'device to host' lc rgb '#fb8c00'
set title 'time per iteration'
set ylabel 'ms'
set key outside bottom center horizontal maxrows 2
plot 'links.dat' using 4:xtic(1) title 'lms (predicted)' lc rgb '#2e7d32', '' using 5 title 'on-demand swapping (predicted)' lc rgb '#9e9e9e', '' using 6 title 'in memory' lc rgb '#6a1b9a', '' using 9 title 'measured' lc rgb '#000000'
unset multiplot
