# GPU busy per link.  Redraw: gnuplot busy.gp
set terminal pngcairo size 1100,420 font 'sans,10' noenhanced
set output 'busy.png'
set style fill solid 0.85 border -1
set grid ytics lc rgb '#dddddd'
set datafile missing '-'
set style data histograms
set style histogram clustered gap 1
set xtics rotate by -30 nomirror
set key outside bottom center horizontal
set title "googlenet-1200-b10-train: GPU busy (compute time over the iteration's time)"
set ylabel 'GPU busy (%)'
set yrange [0:105]
plot 'links.dat' using 7:xtic(1) title 'lms (schedule, predicted)' lc rgb '#2e7d32', '' using 8 title 'on-demand swapping (predicted)' lc rgb '#9e9e9e', '' using 10 title 'measured' lc rgb '#000000', '' using ($0-0.25):7:(sprintf('%.0f', $7)) with labels offset 0,0.7 font ',8' notitle, '' using ($0):8:(sprintf('%.0f', $8)) with labels offset 0,0.7 font ',8' notitle, '' using ($0+0.25):10:(sprintf('%.0f', $10)) with labels offset 0,0.7 font ',8' notitle
