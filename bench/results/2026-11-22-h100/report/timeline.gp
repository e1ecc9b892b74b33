# The kernels and copies of a few steps, as the simulated device recorded them.
# Redraw: gnuplot timeline.gp
set terminal pngcairo size 1100,720 font 'sans,10' noenhanced
set output 'timeline.png'
set style fill solid 0.85 border -1
set grid ytics lc rgb '#dddddd'
set xlabel 'time from the start of the window (ms)'
set ytics ('compute' 2, 'host to device' 1, 'device to host' 0)
set yrange [-0.6:2.8]
set grid xtics
set multiplot layout 2,1 title "googlenet-1200-b10-train: kernels and copies"
set title "pcie3 link (12.2/12.9 GB/s): steps 289-300, the GPU waits 489.7 of 520.5 ms (94%)"
set xrange [0:525.672627]
unset key
set bmargin 3
plot 'timeline-pcie3.dat' index 0 using 1:2:3:4 with boxxyerror lc rgb '#2e7d32' title 'kernel (label: step)', \
     '' index 3 using 1:2:3:4 with boxxyerror lc rgb '#e53935' title 'GPU waiting for data', \
     '' index 1 using 1:2:3:4 with boxxyerror lc rgb '#1e88e5' title 'copy host to device', \
     '' index 2 using 1:2:3:4 with boxxyerror lc rgb '#fb8c00' title 'copy device to host', \
     '' index 0 using 1:(2.5):5 with labels font ',8' notitle
set title "nvlink2 link (66.0/60.0 GB/s): steps 289-300, the GPU waits 66.4 of 97.2 ms (68%)"
set xrange [0:525.672627]
set key at screen 0.5, screen 0.01 center bottom horizontal
set bmargin 6
plot 'timeline-nvlink2.dat' index 0 using 1:2:3:4 with boxxyerror lc rgb '#2e7d32' title 'kernel (label: step)', \
     '' index 3 using 1:2:3:4 with boxxyerror lc rgb '#e53935' title 'GPU waiting for data', \
     '' index 1 using 1:2:3:4 with boxxyerror lc rgb '#1e88e5' title 'copy host to device', \
     '' index 2 using 1:2:3:4 with boxxyerror lc rgb '#fb8c00' title 'copy device to host', \
     '' index 0 using 1:(2.5):5 with labels font ',8' notitle
unset multiplot
